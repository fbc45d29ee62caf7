package node

import (
	"encoding/json"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// reconcileDelay is how long after its own patch the worker trusts the informer's copy of the Pod to
// show it; a difference that remains after that was made by someone else (the node lifecycle controller
// marking Pods not ready) and is corrected.
const reconcileDelay = 2 * time.Second

// flushStatus patches the Pod's status when it changed, at most once per StatusBatch. Nothing is sent
// while the node is offline.
func (w *podWorker) flushStatus() {
	if !w.node.online() {
		return
	}
	w.mu.Lock()
	latest := w.latest
	w.mu.Unlock()
	st := w.computeStatus(latest)
	sameAsSent := w.lastSent != nil && equality.Semantic.DeepEqual(st, *w.lastSent)
	sameAsAPI := equality.Semantic.DeepEqual(st, latest.Status)
	sinceLast := time.Since(w.lastPatch)
	if sameAsSent && (sameAsAPI || sinceLast < reconcileDelay) {
		if !sameAsAPI {
			w.wakeBy(w.lastPatch.Add(reconcileDelay))
		}
		return
	}
	if batch := w.a.opts.Timing.StatusBatch; sinceLast < batch {
		w.wakeBy(w.lastPatch.Add(batch))
		return
	}
	base := latest.Status
	if w.lastSent != nil && sinceLast < reconcileDelay {
		base = *w.lastSent
	}
	if err := w.patchStatus(base, st); err != nil {
		w.a.logf("pod %s/%s: patch status: %v", w.ns, w.name, err)
		w.wakeBy(time.Now().Add(time.Second))
		return
	}
	w.lastSent, w.lastPatch = &st, time.Now()
	w.a.logf("pod %s/%s: status patched: %s, ready %s", w.ns, w.name, st.Phase, conditionStatus(st, corev1.PodReady))
}

func conditionStatus(st corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// computeStatus builds the status to report. The agent's own conditions start from what it last sent,
// so their transition times stay put while the informer catches up; the rest comes from the API.
func (w *podWorker) computeStatus(latest *corev1.Pod) corev1.PodStatus {
	base := latest.DeepCopy()
	if w.lastSent != nil {
		for _, c := range w.lastSent.Conditions {
			if slices.Contains(ownedConditions, c.Type) {
				setCondition(&base.Status, c, c.LastTransitionTime.Time)
			}
		}
	}
	in := statusInput{sandboxReady: w.sandbox != nil, podIP: w.ip, hostIP: w.a.opts.NodeIP,
		startTime: w.startTime, now: time.Now(), rejectReason: w.reject[0], rejectMessage: w.reject[1]}
	if w.sandbox == nil {
		in.podIP = netip.Addr{}
	}
	initDone := true
	for _, c := range w.init {
		in.init = append(in.init, c.reportedStatus(w.sandbox != nil, true))
		initDone = initDone && c.status.State.Terminated != nil && c.status.State.Terminated.ExitCode == 0
	}
	for _, c := range w.containers {
		in.containers = append(in.containers, c.reportedStatus(w.sandbox != nil, initDone))
	}
	return normalize(podStatus(base, in))
}

// reportedStatus fills in the waiting state of a container that has not started yet.
func (c *container) reportedStatus(sandboxReady, initDone bool) corev1.ContainerStatus {
	st := *c.status.DeepCopy()
	if st.State.Running == nil && st.State.Terminated == nil && st.State.Waiting == nil {
		reason := "ContainerCreating"
		if sandboxReady && !initDone {
			reason = "PodInitializing"
		}
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
	}
	if st.Started == nil {
		st.Started = ptrFalse()
	}
	return st
}

func ptrFalse() *bool { f := false; return &f }

// normalize round-trips a status through JSON, so times have the API's precision and comparisons with
// the informer's copy are exact.
func normalize(st corev1.PodStatus) corev1.PodStatus {
	data, err := json.Marshal(st)
	if err != nil {
		return st
	}
	var out corev1.PodStatus
	if err := json.Unmarshal(data, &out); err != nil {
		return st
	}
	return out
}

// patchStatus sends the difference between base and st as a strategic merge patch of the status
// subresource, with the Pod's UID as a precondition (a new Pod of the same name is not ours).
func (w *podWorker) patchStatus(base, st corev1.PodStatus) error {
	oldJSON, err := json.Marshal(corev1.Pod{Status: base})
	if err != nil {
		return err
	}
	newJSON, err := json.Marshal(corev1.Pod{Status: st})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
	if err != nil {
		return err
	}
	var body map[string]any
	if err := json.Unmarshal(patch, &body); err != nil {
		return err
	}
	body["metadata"] = map[string]any{"uid": string(w.uid)}
	if patch, err = json.Marshal(body); err != nil {
		return err
	}
	ctx, cancel := w.apiContext()
	defer cancel()
	_, err = w.a.client.CoreV1().Pods(w.ns).Patch(ctx, w.name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted or replaced: the informer will tell
	}
	return err
}
