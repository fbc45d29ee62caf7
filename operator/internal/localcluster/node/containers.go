package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/logtail"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// container is the worker's record of one container across its restarts.
type container struct {
	spec   corev1.Container
	init   bool
	status corev1.ContainerStatus

	proc        *podruntime.Process // nil when not running
	instance    int                 // counts starts; results about older instances are stale
	everRan     bool
	startedAt   time.Time
	stopProbes  context.CancelFunc
	killing     bool          // a stop (liveness, deletion) is under way
	nextStart   time.Time     // earliest restart (back-off)
	delay       time.Duration // the back-off before nextStart
	backoff     time.Duration // the back-off after the next failure
	lastFailure string        // last reason a start failed, for the waiting state
	restartOnce bool          // the current instance was stopped to run a changed definition
}

func newContainer(spec corev1.Container, init bool) *container {
	return &container{spec: spec, init: init, status: corev1.ContainerStatus{Name: spec.Name, Image: spec.Image,
		ImageID: "localcluster://" + spec.Image}}
}

// syncContainers runs init containers one at a time, in order, then starts or restarts the regular
// containers according to the restart policy and back-off.
func (w *podWorker) syncContainers() {
	w.applyImageChanges()
	policy := w.view.Spec.RestartPolicy
	for _, c := range w.init {
		if c.proc != nil {
			return // still running: the next waits for it
		}
		if t := c.status.State.Terminated; t != nil {
			if t.ExitCode == 0 {
				continue
			}
			if policy == corev1.RestartPolicyNever {
				return // the Pod has failed
			}
		}
		w.startOrWait(c)
		return
	}
	for _, c := range w.containers {
		if c.proc != nil || c.status.State.Terminated != nil {
			continue // running, or finished for good
		}
		w.startOrWait(c)
	}
}

// applyImageChanges restarts a regular container whose image was changed in the Pod (the one container
// field a Pod update may change), as a kubelet does when a container's definition changes: stop it with
// the Pod's grace period, then start the new image at once, without crash back-off.
func (w *podWorker) applyImageChanges() {
	for i, c := range w.containers {
		want := w.view.Spec.Containers[i]
		if want.Image == c.spec.Image {
			continue
		}
		c.spec = want
		c.backoff, c.nextStart = 0, time.Time{}
		if c.proc != nil {
			w.event(w.containerRef(c), corev1.EventTypeNormal, "Killing",
				fmt.Sprintf("Container %s definition changed, will be restarted", c.spec.Name))
			c.restartOnce = true
			w.stopContainer(c, containerGrace(w.view, nil), true)
		} else if c.status.State.Terminated != nil {
			c.status.LastTerminationState = c.status.State
			c.setWaiting("ContainerCreating", "")
		}
	}
}

// willRestart reports whether a container that exited with code restarts under policy. Init containers
// that succeeded never run again.
func willRestart(policy corev1.RestartPolicy, init bool, code int32) bool {
	switch {
	case init && code == 0:
		return false
	case policy == corev1.RestartPolicyNever:
		return false
	case policy == corev1.RestartPolicyOnFailure || init:
		return code != 0
	default:
		return true
	}
}

// startOrWait starts c unless its back-off has not expired.
func (w *podWorker) startOrWait(c *container) {
	now := time.Now()
	if now.Before(c.nextStart) {
		if c.everRan && c.lastFailure == "" {
			msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				c.delay.Round(time.Second), c.spec.Name, w.name, w.ns, w.uid)
			c.setWaiting("CrashLoopBackOff", msg)
			w.report(w.containerRef(c), "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)",
				c.spec.Name, w.name, w.ns, w.uid))
		}
		w.wakeBy(c.nextStart)
		return
	}
	if err := w.startContainer(c); err != nil {
		var cfg *startError
		if errors.As(err, &cfg) {
			c.setWaiting(cfg.reason, cfg.msg)
			c.lastFailure = cfg.reason
			w.report(w.containerRef(c), "Failed", "Error: "+cfg.msg)
		} else {
			c.setWaiting("CreateContainerError", err.Error())
			c.lastFailure = "CreateContainerError"
			w.report(w.containerRef(c), "Failed", "Error: "+err.Error())
		}
		retry := w.a.opts.Timing.BackoffStart
		if cfg != nil && cfg.slow {
			retry = w.a.opts.Timing.BackoffMax
		}
		c.nextStart = now.Add(retry)
		w.wakeBy(c.nextStart)
	}
}

// startError is a failure to start a container that leaves it Waiting with reason and msg.
type startError struct {
	reason, msg string
	slow        bool // retry only after the maximum back-off: nothing will change soon
}

func (e *startError) Error() string { return e.reason + ": " + e.msg }

func (c *container) setWaiting(reason, msg string) {
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	c.status.Ready = false
}

// startContainer resolves the container (image, environment, identity, mounts) and starts it.
func (w *podWorker) startContainer(c *container) error {
	img, ok := w.a.opts.Images.Lookup(c.spec.Image)
	if !ok {
		return &startError{reason: "ImageNotInTable", msg: notInTableMessage(c.spec.Image), slow: true}
	}
	if _, err := os.Stat(img.Binary); err != nil {
		return &startError{reason: "ImageBinaryMissing", slow: true, msg: fmt.Sprintf("image %q maps to %s, "+
			"which is missing: build it with scripts/build-tool.sh (see operator/tools)", c.spec.Image, img.Binary)}
	}
	spec, err := w.containerSpec(c, img)
	if err != nil {
		var cfg *configError
		if errors.As(err, &cfg) {
			return &startError{reason: "CreateContainerConfigError", msg: cfg.msg}
		}
		return err
	}
	w.event(w.containerRef(c), corev1.EventTypeNormal, "Pulled",
		fmt.Sprintf("Container image %q already present on machine", c.spec.Image))
	if c.everRan {
		c.status.RestartCount++ // every new instance counts, as with a kubelet, even one that fails to start
	}
	proc, err := w.sandbox.Start(spec)
	if err != nil {
		// Like a runtime's StartError: it counts as a run that failed at once, with back-off.
		w.event(w.containerRef(c), corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		now := time.Now()
		c.everRan = true
		c.startedAt = now
		w.recordExit(c, podruntime.ExitStatus{Code: 128, Started: now, Finished: now}, "StartError", err.Error())
		return nil
	}
	w.event(w.containerRef(c), corev1.EventTypeNormal, "Created", "Created container: "+c.spec.Name)
	w.event(w.containerRef(c), corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name)
	c.everRan, c.proc, c.killing, c.lastFailure = true, proc, false, ""
	c.status.Image, c.status.ImageID = c.spec.Image, "localcluster://"+c.spec.Image
	c.instance++
	c.startedAt = time.Now()
	delete(w.reported, "BackOff/"+w.containerRef(c).FieldPath)
	c.status.ContainerID = fmt.Sprintf("localcluster://%s/%s/%d", w.uid, c.spec.Name, c.status.RestartCount)
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}}
	c.status.Ready = false
	c.status.Started = ptr.To(c.init || c.spec.StartupProbe == nil)
	if !c.init && c.spec.ReadinessProbe == nil && c.spec.StartupProbe == nil {
		c.status.Ready = true
	}
	w.a.logf("pod %s/%s: container %s started, pid %d", w.ns, w.name, c.spec.Name, proc.Pid())
	inst := c.instance
	go func() {
		<-proc.Done()
		w.post(func() { w.containerExited(c, inst) })
	}()
	if !c.init {
		w.startProbes(c, inst)
		if h := c.spec.Lifecycle; h != nil && h.PostStart != nil {
			w.runPostStart(c, inst, h.PostStart)
		}
	}
	return nil
}

// containerExited records the end of instance inst of c.
func (w *podWorker) containerExited(c *container, inst int) {
	if inst != c.instance || c.proc == nil {
		return
	}
	st := c.proc.Status()
	reason := "Completed"
	if st.Code != 0 {
		reason = "Error"
	}
	msg := ""
	if st.Code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = logTail(w.logPath(c), 80, 2048)
	}
	w.recordExit(c, st, reason, msg)
}

// recordExit moves c to Terminated, or to Waiting with the termination kept as the last state when it
// will restart, and sets its back-off: the first restart is immediate, then BackoffStart doubling up to
// BackoffMax; a run that lasted twice BackoffMax resets it.
func (w *podWorker) recordExit(c *container, st podruntime.ExitStatus, reason, msg string) {
	if c.stopProbes != nil {
		c.stopProbes()
		c.stopProbes = nil
	}
	c.proc = nil
	c.killing = false
	started, finished := st.Started, st.Finished
	if started.IsZero() {
		started = c.startedAt
	}
	if finished.IsZero() {
		finished = time.Now()
	}
	term := &corev1.ContainerStateTerminated{ExitCode: int32(st.Code), Signal: int32(st.Signal), Reason: reason,
		Message: msg, StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished),
		ContainerID: c.status.ContainerID}
	w.a.logf("pod %s/%s: container %s exited with code %d (%s)", w.ns, w.name, c.spec.Name, st.Code, reason)
	c.status.Ready = false
	c.status.Started = ptr.To(false)
	if c.init && st.Code == 0 {
		c.status.Ready = true // an init container that completed counts as ready, as in kubelet
	}
	if !w.restartsAfter(c, int32(st.Code)) {
		c.status.State = corev1.ContainerState{Terminated: term}
		return
	}
	c.status.LastTerminationState = corev1.ContainerState{Terminated: term}
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	t := w.a.opts.Timing
	if finished.Sub(started) >= 2*t.BackoffMax {
		c.backoff = 0
	}
	c.delay = c.backoff
	c.backoff = min(max(2*c.backoff, t.BackoffStart), t.BackoffMax)
	c.nextStart = finished.Add(c.delay)
}

func (w *podWorker) restartsAfter(c *container, code int32) bool {
	if w.term != nil {
		return false // the Pod is being deleted
	}
	if c.restartOnce {
		c.restartOnce = false
		return true // stopped to run a changed definition: runs again whatever the policy
	}
	return willRestart(w.view.Spec.RestartPolicy, c.init, code)
}

// stopContainer runs c's preStop hook (if any and asked for), then SIGTERM, then SIGKILL after grace,
// without blocking the worker: the exit arrives as usual.
func (w *podWorker) stopContainer(c *container, grace time.Duration, preStop bool) {
	if c.proc == nil || c.killing {
		return
	}
	c.killing = true
	grace = max(grace, minimumGrace)
	proc := c.proc
	var hook func(context.Context)
	if h := c.spec.Lifecycle; preStop && h != nil && h.PreStop != nil {
		hook = w.hookRunner(c, proc, h.PreStop, "FailedPreStopHook")
	}
	go func() {
		deadline := time.Now().Add(grace)
		if hook != nil {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			hook(ctx)
			cancel()
		}
		_ = proc.Signal(syscall.SIGTERM)
		t := time.NewTimer(max(time.Until(deadline), 0))
		defer t.Stop()
		select {
		case <-proc.Done():
		case <-t.C:
			_ = proc.Signal(syscall.SIGKILL)
		}
	}()
}

// minimumGrace is the least time a container gets between SIGTERM and SIGKILL, as in kubelet.
const minimumGrace = 2 * time.Second

// containerGrace is the grace period for stopping a container outside a deletion (a failed liveness
// probe): the probe's own terminationGracePeriodSeconds, else the Pod's.
func containerGrace(pod *corev1.Pod, probe *corev1.Probe) time.Duration {
	if probe != nil && probe.TerminationGracePeriodSeconds != nil {
		return time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
	}
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return 30 * time.Second
}

// powerOff kills every process of the Pod at once, as a power loss would, and returns once they are
// gone (reaped), so a caller may check that nothing of the Pod runs.
func (w *podWorker) powerOff() {
	var killed []*podruntime.Process
	for _, c := range append(append([]*container{}, w.init...), w.containers...) {
		if c.stopProbes != nil {
			c.stopProbes()
			c.stopProbes = nil
		}
		if c.proc != nil {
			_ = c.proc.Signal(syscall.SIGKILL)
			killed = append(killed, c.proc)
		}
	}
	deadline := time.After(5 * time.Second)
	for _, p := range killed {
		select {
		case <-p.Done():
		case <-deadline:
			w.a.logf("pod %s/%s: pid %d not reaped 5 s after SIGKILL", w.ns, w.name, p.Pid())
			return
		}
	}
}

// logTail returns at most the last lines lines (and maxBytes bytes) of a log, for termination messages.
func logTail(path string, lines, maxBytes int) string {
	all, err := logtail.Lines(path, lines, maxBytes)
	if err != nil {
		return ""
	}
	return strings.Join(all, "\n")
}
