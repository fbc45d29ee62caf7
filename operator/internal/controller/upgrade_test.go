package controller_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

func TestRollingUpgradeOneAtATimeLeaderLast(t *testing.T) {
	h := newHarness(t, etcdv1.EtcdClusterSpec{Size: 3, Version: "3.5.21"})
	h.settle()
	leader := leaderOf(h)
	uids := map[string]string{}
	for n, p := range h.pods() {
		uids[n] = string(p.UID)
	}
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Version = "3.6.7" })

	var order []string
	for range 20 {
		before := images(h)
		h.reconcile()
		after := images(h)
		changed := 0
		for n, img := range after {
			if before[n] != img {
				changed++
				order = append(order, n)
			}
		}
		if changed > 1 {
			t.Fatalf("%d members upgraded in one pass", changed)
		}
		cl := h.cluster()
		if c := findCondition(cl, etcdv1.ConditionProgressing); c.Status == metav1.ConditionFalse && cl.Status.ObservedGeneration == cl.Generation {
			break
		}
	}
	if len(order) != 3 || order[2] != leader {
		t.Fatalf("upgrade order %v, want all 3 with the leader %s last", order, leader)
	}
	for n, p := range h.pods() {
		if string(p.UID) != uids[n] {
			t.Errorf("%s was recreated; an upgrade swaps the image in place", n)
		}
	}
	cl := h.cluster()
	if cl.Status.CurrentVersion != "3.6.7" {
		t.Errorf("currentVersion = %q", cl.Status.CurrentVersion)
	}
	if !slices.Equal(verbs(h.calls()), []string{"MoveLeader"}) {
		t.Errorf("calls = %v, want one MoveLeader before the leader's upgrade", h.calls())
	}
	ev := strings.Join(h.events(), "\n")
	if strings.Count(ev, "MemberUpgraded") != 3 {
		t.Errorf("want 3 MemberUpgraded events:\n%s", ev)
	}
}

func TestUpgradeWaitsForEveryMemberHealthy(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := nonLeader(h)
	h.etcd.SetDown(victim, true)
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Version = "3.6.8" })
	before := images(h)
	for range 3 {
		h.reconcile()
	}
	if after := images(h); !maps.Equal(before, after) {
		t.Fatalf("upgraded while %s was unhealthy: %v -> %v", victim, before, after)
	}
	wantCondition(t, h.cluster(), etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonWaiting)
	h.etcd.SetDown(victim, false)
	h.settle()
	for n, img := range images(h) {
		if !strings.HasSuffix(img, ":v3.6.8") {
			t.Errorf("%s runs %s after the member recovered", n, img)
		}
	}
}

// A member etcd calls healthy whose Pod is not Ready (its readiness probe has not passed yet, so the
// client Service does not route to it) must not let the upgrade move on to the next member.
func TestUpgradeWaitsForMemberPodsReady(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := h.pods()[nonLeader(h)]
	victim.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	must(t, h.c.Status().Update(h.ctx, victim))
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Version = "3.6.8" })
	before := images(h)
	for range 3 {
		h.reconcile()
	}
	if after := images(h); !maps.Equal(before, after) {
		t.Fatalf("upgraded while %s's Pod was not Ready: %v -> %v", victim.Name, before, after)
	}
	wantCondition(t, h.cluster(), etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonWaiting)
	if got := h.cluster().Status.ReadyMembers; got != 2 {
		t.Errorf("readyMembers = %d with one Pod not Ready, want 2", got)
	}
	h.setPhase(victim, corev1.PodRunning) // Ready again
	h.settle()
	for n, img := range images(h) {
		if !strings.HasSuffix(img, ":v3.6.8") {
			t.Errorf("%s runs %s after its Pod became Ready", n, img)
		}
	}
}

func TestFailedPodIsDeletedAndReplaced(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := nonLeader(h)
	h.etcd.SetDown(victim, true)
	h.setPhase(h.pods()[victim], corev1.PodFailed)
	h.reconcile()
	if h.pods()[victim] != nil {
		t.Fatalf("failed Pod %s was not deleted", victim)
	}
	h.settle()
	if n := len(h.pods()); n != 3 || h.cluster().Status.ReadyMembers != 3 {
		t.Fatalf("after replacing a failed Pod: %d pods, %d ready", n, h.cluster().Status.ReadyMembers)
	}
}

func images(h *harness) map[string]string {
	out := map[string]string{}
	for n, p := range h.pods() {
		out[n] = p.Spec.Containers[0].Image
	}
	return out
}

func TestLearnerNotCaughtUpIsAWaitNotAFailure(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.etcd.SetAutoCatchUp(false)
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 4 })
	h.reconcile() // add learner
	h.reconcile() // create its Pod
	h.runPods()
	res := h.reconcile() // promote: etcd says not ready
	if res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
		t.Fatalf("requeue after %v, want a short retry", res.RequeueAfter)
	}
	if ev := strings.Join(h.events(), "\n"); strings.Contains(ev, "ActionFailed") {
		t.Fatalf("a learner catching up was reported as a failure:\n%s", ev)
	}
	wantCondition(t, h.cluster(), etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonHealthy)
	learner := memberID(h, "e-3")
	h.etcd.SetCaughtUp(learner, true)
	h.settle()
	if got := h.cluster().Status.ReadyMembers; got != 4 {
		t.Fatalf("ready = %d after the learner caught up", got)
	}
}
