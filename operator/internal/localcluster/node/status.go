package node

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusInput is everything the agent observed of a Pod; podStatus turns it into the Pod's status.
type statusInput struct {
	sandboxReady bool
	podIP        netip.Addr
	hostIP       netip.Addr
	startTime    time.Time
	now          time.Time
	init         []corev1.ContainerStatus
	containers   []corev1.ContainerStatus
	// rejected, when set, is why the agent refused the Pod as a whole (reason, message): it fails.
	rejectReason, rejectMessage string
}

// ownedConditions are the Pod conditions the agent sets; others (PodScheduled, readiness gates,
// DisruptionTarget) belong to other components and are left alone.
var ownedConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady,
}

// podStatus computes the Pod's status from the current one (whose fields the agent does not own are
// kept) and what the agent observed. It has no side effects.
func podStatus(pod *corev1.Pod, in statusInput) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	s.ObservedGeneration = pod.Generation
	if in.hostIP.IsValid() {
		s.HostIP = in.hostIP.String()
		s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	}
	if in.podIP.IsValid() {
		s.PodIP = in.podIP.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if !in.startTime.IsZero() && s.StartTime == nil {
		t := metav1.NewTime(in.startTime)
		s.StartTime = &t
	}
	s.InitContainerStatuses = in.init
	s.ContainerStatuses = in.containers
	if in.rejectReason != "" {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, in.rejectReason, in.rejectMessage
	} else {
		s.Phase = podPhase(pod, in)
	}

	initDone, pendingInit := initializationDone(pod, in.init)
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message,
			ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		setCondition(&s, c, in.now)
	}
	set(corev1.PodReadyToStartContainers, in.sandboxReady, "", "")
	set(corev1.PodInitialized, initDone, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInit, " ")))
	unready := unreadyContainers(pod, in.containers)
	switch {
	case s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed:
		set(corev1.ContainersReady, false, "PodCompleted", "")
		set(corev1.PodReady, false, "PodCompleted", "")
		return s
	case !initDone:
		set(corev1.ContainersReady, false, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInit, " ")))
	default:
		set(corev1.ContainersReady, len(unready) == 0, "ContainersNotReady",
			fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	}
	ready, reason, message := initDone && len(unready) == 0, "ContainersNotReady",
		fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if !initDone {
		reason = "ContainersNotInitialized"
		message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInit, " "))
	} else if ready {
		if msg := unmetReadinessGate(pod); msg != "" {
			ready, reason, message = false, "ReadinessGatesNotReady", msg
		}
	}
	set(corev1.PodReady, ready, reason, message)
	return s
}

// setCondition replaces the condition of c's type, keeping its last transition time when the status
// did not change.
func setCondition(s *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now)
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			if s.Conditions[i].Status == c.Status {
				c.LastTransitionTime = s.Conditions[i].LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// initializationDone reports whether every init container has completed successfully, and names those
// that have not.
func initializationDone(pod *corev1.Pod, init []corev1.ContainerStatus) (bool, []string) {
	var pending []string
	for _, c := range pod.Spec.InitContainers {
		st := findStatus(init, c.Name)
		if st == nil || st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			pending = append(pending, c.Name)
		}
	}
	return len(pending) == 0, pending
}

func unreadyContainers(pod *corev1.Pod, statuses []corev1.ContainerStatus) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		if st := findStatus(statuses, c.Name); st == nil || !st.Ready {
			out = append(out, c.Name)
		}
	}
	return out
}

// unmetReadinessGate returns the kubelet's message for the first readiness gate whose condition is not
// True, or "".
func unmetReadinessGate(pod *corev1.Pod) string {
	for _, g := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		if i < 0 {
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		}
		if st := pod.Status.Conditions[i].Status; st != corev1.ConditionTrue {
			return fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, st)
		}
	}
	return ""
}

func findStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// podPhase follows the kubelet: Pending until initialized and every container has run at least once;
// Running while any runs or will be restarted; Succeeded when all exited 0 and none will restart;
// Failed when any failed and none will restart.
func podPhase(pod *corev1.Pod, in statusInput) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	for _, c := range pod.Spec.InitContainers {
		st := findStatus(in.init, c.Name)
		if st != nil && st.State.Terminated != nil && st.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
	}
	if done, _ := initializationDone(pod, in.init); !done {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range pod.Spec.Containers {
		st := findStatus(in.containers, c.Name)
		switch {
		case st == nil:
			waiting++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.LastTerminationState.Terminated != nil: // waiting to restart after having run
			stopped++
			if st.LastTerminationState.Terminated.ExitCode == 0 {
				succeeded++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case policy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case stopped == succeeded:
		return corev1.PodSucceeded
	case policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	default: // OnFailure with failures: they restart
		return corev1.PodRunning
	}
}
