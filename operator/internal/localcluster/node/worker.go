package node

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// podWorker owns one Pod (by UID) on one node. A single goroutine (run) owns all its state; everything
// else (informer updates, process exits, probe results, chaos calls) reaches it as a wake-up or as a
// function sent to its inbox, so no lock guards the containers.
type podWorker struct {
	a        *Agent
	node     *nodeState
	uid      types.UID
	ns, name string

	mu      sync.Mutex // guards latest and deleted, written by the informer
	latest  *corev1.Pod
	deleted bool

	wakeCh   chan struct{}
	inbox    chan func()
	quit     chan struct{} // closed by shutdown
	quitOnce sync.Once
	done     chan struct{} // closed when run returns

	// Owned by run.
	view       *corev1.Pod // the Pod as this node knows it (frozen while partitioned)
	gone       bool        // the Pod vanished from the API
	dir        string      // Dir/<node>/pods/<uid>
	ip         netip.Addr
	sandbox    *podruntime.Sandbox
	startTime  time.Time
	reject     [2]string // reason, message when the Pod cannot run here
	volumes    *podVolumes
	init       []*container
	containers []*container
	term       *termination
	lastSent   *corev1.PodStatus
	lastPatch  time.Time
	wakeAt     time.Time
	reported   map[string]string // event reason/object -> last message, to report each problem once
}

func newPodWorker(a *Agent, n *nodeState, pod *corev1.Pod) *podWorker {
	w := &podWorker{a: a, node: n, uid: pod.UID, ns: pod.Namespace, name: pod.Name, latest: pod, view: pod,
		wakeCh: make(chan struct{}, 1), inbox: make(chan func(), 16), quit: make(chan struct{}),
		done: make(chan struct{}), dir: filepath.Join(a.opts.Dir, n.name, "pods", string(pod.UID)),
		reported: map[string]string{}}
	for _, c := range pod.Spec.InitContainers {
		w.init = append(w.init, newContainer(c, true))
	}
	for _, c := range pod.Spec.Containers {
		w.containers = append(w.containers, newContainer(c, false))
	}
	return w
}

// update records the latest Pod object and wakes the worker.
func (w *podWorker) update(pod *corev1.Pod, deleted bool) {
	w.mu.Lock()
	if !w.deleted {
		w.latest, w.deleted = pod, deleted
	}
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// post runs f on the worker's goroutine, unless the worker has ended.
func (w *podWorker) post(f func()) {
	select {
	case w.inbox <- f:
	case <-w.done:
	}
}

// call runs f on the worker's goroutine and waits for it; false if the worker has ended.
func (w *podWorker) call(f func()) {
	ran := make(chan struct{})
	select {
	case w.inbox <- func() { f(); close(ran) }:
	case <-w.done:
		return
	}
	select {
	case <-ran:
	case <-w.done:
	}
}

// shutdown kills the Pod's processes and removes its sandbox without touching the API (agent Stop).
func (w *podWorker) shutdown() {
	w.quitOnce.Do(func() { close(w.quit) })
	<-w.done
}

func (w *podWorker) run() {
	defer close(w.done)
	defer w.a.forget(w.uid)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.wakeAt = time.Time{}
		if w.sync() {
			return
		}
		d := time.Hour
		if !w.wakeAt.IsZero() {
			d = max(time.Until(w.wakeAt), time.Millisecond)
		}
		timer.Reset(d)
		select {
		case <-w.wakeCh:
		case f := <-w.inbox:
			f()
		case <-timer.C:
		case <-w.quit:
			w.powerOff()
			w.removeSandbox()
			return
		}
	}
}

// wakeBy asks run to sync again no later than t.
func (w *podWorker) wakeBy(t time.Time) {
	if w.wakeAt.IsZero() || t.Before(w.wakeAt) {
		w.wakeAt = t
	}
}

// sync moves the Pod one step towards what its object asks: tear down if deleted, else sandbox,
// volumes, containers; then report status. It returns true once the Pod is gone for good.
func (w *podWorker) sync() bool {
	if w.node.isStopped() {
		return false // powered off: nothing runs and nothing is reported until StartNode
	}
	partitioned := w.node.isPartitioned()
	if !partitioned { // a partitioned node does not hear from the apiserver
		w.mu.Lock()
		w.view, w.gone = w.latest, w.deleted
		w.mu.Unlock()
	}
	if w.gone || w.view.DeletionTimestamp != nil {
		return w.terminate()
	}
	if w.startTime.IsZero() {
		w.startTime = time.Now()
		if reason, msg := unsupported(w.view); reason != "" {
			w.reject = [2]string{reason, msg}
			w.event(w.podRef(), corev1.EventTypeWarning, reason, msg)
		}
	}
	if w.reject[0] == "" && w.ensureSandbox() && w.ensureVolumes() {
		w.syncContainers()
	}
	w.flushStatus()
	return false
}

// ensureSandbox allocates the Pod's address, creates its sandbox and writes its /etc files.
func (w *podWorker) ensureSandbox() bool {
	if w.sandbox != nil {
		return true
	}
	if w.node.isPartitioned() {
		return false // a partitioned node learns of no new Pods
	}
	fail := func(err error) bool {
		w.report(w.podRef(), "FailedCreatePodSandBox", fmt.Sprintf("Failed to create pod sandbox: %v", err))
		w.wakeBy(time.Now().Add(w.a.opts.Timing.BackoffMax))
		return false
	}
	ip, err := w.node.pool.allocate(string(w.uid))
	if err != nil {
		return fail(err)
	}
	w.ip = ip
	if err := w.writeEtcFiles(); err != nil {
		return fail(err)
	}
	sb, err := w.a.opts.Runtime.CreateSandbox(podruntime.SandboxSpec{ID: string(w.uid), IP: ip,
		Hostname: podHostname(w.view)})
	if err != nil {
		return fail(err)
	}
	w.sandbox = sb
	w.a.logf("pod %s/%s: sandbox on %s with IP %s", w.ns, w.name, w.node.name, ip)
	return true
}

func (w *podWorker) writeEtcFiles() error {
	etc := filepath.Join(w.dir, "etc")
	for _, d := range []string{etc, filepath.Join(w.dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string][]byte{
		"hosts":       renderHosts(w.view, w.ip, w.a.opts.DNS.Domain),
		"resolv.conf": renderResolvConf(w.view, w.a.opts.DNS),
		"hostname":    []byte(podHostname(w.view) + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(etc, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// removeSandbox deletes the sandbox and frees the address; the Pod's directory goes with it, provisioned
// volumes (under Dir/<node>/pv) stay.
func (w *podWorker) removeSandbox() {
	if w.sandbox != nil {
		if err := w.sandbox.Delete(); err != nil {
			w.a.logf("pod %s/%s: delete sandbox: %v", w.ns, w.name, err)
		}
		w.sandbox = nil
	}
	w.node.pool.release(string(w.uid))
	if err := os.RemoveAll(w.dir); err != nil {
		w.a.logf("pod %s/%s: remove %s: %v", w.ns, w.name, w.dir, err)
	}
}

// unsupported names the first feature of pod the agent cannot provide in a way that would keep the Pod
// from working as written; such a Pod fails at once with a clear message rather than misbehaving.
func unsupported(pod *corev1.Pod) (reason, message string) {
	var what string
	switch {
	case pod.Spec.HostNetwork:
		what = "spec.hostNetwork"
	case pod.Spec.HostPID:
		what = "spec.hostPID"
	case pod.Spec.HostIPC:
		what = "spec.hostIPC"
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		what = "spec.shareProcessNamespace"
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && what == "" {
			what = fmt.Sprintf("sidecar init container %q (restartPolicy: Always)", c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 && what == "" {
				what = fmt.Sprintf("hostPort %d of container %q", p.HostPort, c.Name)
			}
		}
	}
	if what == "" {
		return "", ""
	}
	return "UnsupportedByLocalcluster", fmt.Sprintf("the localcluster node agent runs Pods as local processes "+
		"and does not support %s", what)
}

func (w *podWorker) podRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: w.ns, Name: w.name, UID: w.uid}
}

func (w *podWorker) containerRef(c *container) *corev1.ObjectReference {
	ref := w.podRef()
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", c.spec.Name)
	if c.init {
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	return ref
}

// event records an event unless the node is offline (a powered-off or partitioned kubelet reaches no
// apiserver); it is then only logged.
func (w *podWorker) event(ref *corev1.ObjectReference, typ, reason, msg string) {
	w.a.logf("pod %s/%s: %s %s: %s", w.ns, w.name, typ, reason, msg)
	if w.node.online() {
		w.node.recorder.Event(ref, typ, reason, msg)
	}
}

// report records a warning event once per distinct message, for problems retried on every sync.
func (w *podWorker) report(ref *corev1.ObjectReference, reason, msg string) {
	key := reason + "/" + ref.FieldPath
	if w.reported[key] == msg {
		return
	}
	w.reported[key] = msg
	w.event(ref, corev1.EventTypeWarning, reason, msg)
}

// apiContext bounds one API call of the worker.
func (w *podWorker) apiContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.a.ctx, 10*time.Second)
}
