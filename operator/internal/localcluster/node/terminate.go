package node

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// termination tracks a Pod being deleted.
type termination struct {
	deadline        time.Time
	sandboxRemoved  bool
	finalStatusSent bool
}

// gracePeriod is how long the Pod's containers get between the deletion and SIGKILL.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if s := pod.DeletionGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return 30 * time.Second
}

// terminate tears the Pod down as a kubelet does on deletion: preStop hooks and SIGTERM for every
// container, SIGKILL after the grace period, a last status, the sandbox and the Pod's directory removed,
// the address released, and finally the Pod object deleted with grace 0 and a UID precondition. A Pod
// that vanished from the API (force deletion) is torn down the same way. It returns true when done.
func (w *podWorker) terminate() bool {
	if w.term == nil {
		grace := gracePeriod(w.view)
		if w.gone {
			grace = 0 // force-deleted: the kubelet kills with its minimum grace
		}
		w.term = &termination{deadline: time.Now().Add(grace)}
		for _, c := range append(append([]*container{}, w.init...), w.containers...) {
			if c.proc != nil {
				w.event(w.containerRef(c), corev1.EventTypeNormal, "Killing", "Stopping container "+c.spec.Name)
				w.stopContainer(c, grace, true)
			}
		}
	}
	for _, c := range append(append([]*container{}, w.init...), w.containers...) {
		if c.proc != nil {
			w.flushStatus()
			return false // exits arrive through the inbox
		}
	}
	if !w.term.sandboxRemoved {
		w.removeSandbox()
		w.term.sandboxRemoved = true
		w.a.logf("pod %s/%s: torn down", w.ns, w.name)
	}
	if w.gone {
		return true
	}
	if !w.node.online() {
		w.wakeBy(time.Now().Add(time.Second)) // the API is out of reach until Heal
		return false
	}
	if !w.term.finalStatusSent {
		w.flushStatus()
		w.term.finalStatusSent = true
	}
	ctx, cancel := w.apiContext()
	defer cancel()
	err := w.a.client.CoreV1().Pods(w.ns).Delete(ctx, w.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.a.logf("pod %s/%s: delete: %v", w.ns, w.name, err)
		w.wakeBy(time.Now().Add(time.Second))
		return false
	}
	return true
}
