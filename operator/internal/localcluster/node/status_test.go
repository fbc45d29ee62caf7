package node

import (
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func backingOff(name string, lastCode int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: lastCode}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func TestPodStatus(t *testing.T) {
	withInit := func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init"}} }
	policy := func(r corev1.RestartPolicy) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.RestartPolicy = r }
	}
	gate := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	}
	type conds map[corev1.PodConditionType]corev1.ConditionStatus
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	for name, tc := range map[string]struct {
		mutate   []func(*corev1.Pod)
		in       statusInput
		phase    corev1.PodPhase
		conds    conds
		readyWhy string // Ready's reason, when false
	}{
		"creating": {in: statusInput{containers: []corev1.ContainerStatus{waiting("etcd", "ContainerCreating")}},
			phase: corev1.PodPending, conds: conds{"PodReadyToStartContainers": F, "Initialized": T, "ContainersReady": F, "Ready": F},
			readyWhy: "ContainersNotReady"},
		"running and ready": {in: statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{running("etcd", true)}},
			phase: corev1.PodRunning, conds: conds{"PodReadyToStartContainers": T, "Initialized": T, "ContainersReady": T, "Ready": T}},
		"running, not ready": {in: statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{running("etcd", false)}},
			phase: corev1.PodRunning, conds: conds{"ContainersReady": F, "Ready": F}, readyWhy: "ContainersNotReady"},
		"readiness gate missing": {mutate: []func(*corev1.Pod){gate},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{running("etcd", true)}},
			phase: corev1.PodRunning, conds: conds{"ContainersReady": T, "Ready": F}, readyWhy: "ReadinessGatesNotReady"},
		"init running": {mutate: []func(*corev1.Pod){withInit},
			in: statusInput{sandboxReady: true, init: []corev1.ContainerStatus{running("init", false)},
				containers: []corev1.ContainerStatus{waiting("etcd", "PodInitializing")}},
			phase: corev1.PodPending, conds: conds{"Initialized": F, "ContainersReady": F, "Ready": F}, readyWhy: "ContainersNotInitialized"},
		"init done": {mutate: []func(*corev1.Pod){withInit},
			in: statusInput{sandboxReady: true, init: []corev1.ContainerStatus{exited("init", 0)},
				containers: []corev1.ContainerStatus{running("etcd", true)}},
			phase: corev1.PodRunning, conds: conds{"Initialized": T, "Ready": T}},
		"init failed, Never": {mutate: []func(*corev1.Pod){withInit, policy(corev1.RestartPolicyNever)},
			in: statusInput{sandboxReady: true, init: []corev1.ContainerStatus{exited("init", 1)},
				containers: []corev1.ContainerStatus{waiting("etcd", "PodInitializing")}},
			phase: corev1.PodFailed, conds: conds{"Initialized": F, "Ready": F}, readyWhy: "PodCompleted"},
		"init failed, restarting": {mutate: []func(*corev1.Pod){withInit},
			in: statusInput{sandboxReady: true, init: []corev1.ContainerStatus{backingOff("init", 1)},
				containers: []corev1.ContainerStatus{waiting("etcd", "PodInitializing")}},
			phase: corev1.PodPending, conds: conds{"Initialized": F}},
		"completed, Never": {mutate: []func(*corev1.Pod){policy(corev1.RestartPolicyNever)},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{exited("etcd", 0)}},
			phase: corev1.PodSucceeded, conds: conds{"Ready": F}, readyWhy: "PodCompleted"},
		"failed, Never": {mutate: []func(*corev1.Pod){policy(corev1.RestartPolicyNever)},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{exited("etcd", 2)}},
			phase: corev1.PodFailed},
		"completed, OnFailure": {mutate: []func(*corev1.Pod){policy(corev1.RestartPolicyOnFailure)},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{exited("etcd", 0)}},
			phase: corev1.PodSucceeded},
		"crash looping, Always": {mutate: []func(*corev1.Pod){policy(corev1.RestartPolicyAlways)},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{backingOff("etcd", 1)}},
			phase: corev1.PodRunning, conds: conds{"Ready": F}, readyWhy: "ContainersNotReady"},
		"crash looping, OnFailure": {mutate: []func(*corev1.Pod){policy(corev1.RestartPolicyOnFailure)},
			in:    statusInput{sandboxReady: true, containers: []corev1.ContainerStatus{backingOff("etcd", 1)}},
			phase: corev1.PodRunning},
		"rejected": {in: statusInput{rejectReason: "UnsupportedByLocalcluster", rejectMessage: "no"},
			phase: corev1.PodFailed, conds: conds{"Ready": F}, readyWhy: "PodCompleted"},
	} {
		pod := testPod()
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		for _, m := range tc.mutate {
			m(pod)
		}
		tc.in.now = time.Now()
		st := podStatus(pod, tc.in)
		if st.Phase != tc.phase {
			t.Errorf("%s: phase %s, want %s", name, st.Phase, tc.phase)
		}
		for typ, want := range tc.conds {
			c := condition(st, typ)
			if c == nil || c.Status != want {
				t.Errorf("%s: condition %s = %v, want %s", name, typ, c, want)
			}
		}
		if tc.readyWhy != "" {
			if c := condition(st, corev1.PodReady); c == nil || c.Reason != tc.readyWhy {
				t.Errorf("%s: Ready %+v, want reason %s", name, c, tc.readyWhy)
			}
		}
	}
}

func condition(st corev1.PodStatus, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestPodStatusKeepsOthersAndTransitionTimes(t *testing.T) {
	pod := testPod()
	earlier := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	pod.Status.QOSClass = corev1.PodQOSBurstable
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: "example.com/ready", Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier},
	}
	now := time.Now()
	st := podStatus(pod, statusInput{sandboxReady: true, now: now, podIP: netip.MustParseAddr("10.244.1.2"),
		hostIP: netip.MustParseAddr("10.244.0.1"), startTime: now, containers: []corev1.ContainerStatus{running("etcd", true)}})
	if c := condition(st, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled lost: %+v", st.Conditions)
	}
	if c := condition(st, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&earlier) {
		t.Errorf("Ready did not keep its transition time: %+v", c)
	}
	if c := condition(st, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.Equal(&earlier) {
		t.Errorf("ContainersReady changed but kept its old transition time: %+v", c)
	}
	if st.QOSClass != corev1.PodQOSBurstable || st.PodIP != "10.244.1.2" || len(st.PodIPs) != 1 ||
		st.HostIP != "10.244.0.1" || st.StartTime == nil {
		t.Errorf("addresses or fields not owned by the agent: %+v", st)
	}
}
