package controller_test

import (
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// The reconciler keeps no state between passes, so "the operator restarted" is the same as "the next
// pass ran". These tests take a step the way a previous operator process would have, right before it
// died, and check that the next pass continues from etcd's and Kubernetes' word alone.

func TestCrashAfterAddLearnerDoesNotAddASecond(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 4 })
	// The previous process added the learner and died before creating its Pod or writing status.
	if _, err := h.etcd.AddLearner(h.ctx, []string{"http://e-3.e-peer." + h.ns + ".svc.cluster.local:2380"}); err != nil {
		t.Fatal(err)
	}
	h.etcd.ResetCalls()
	h.reconcile()
	if len(h.calls()) != 0 {
		t.Fatalf("membership changed again: %v", h.calls())
	}
	if h.pods()["e-3"] == nil {
		t.Fatal("the learner's Pod was not created")
	}
	h.settle()
	if got := verbs(h.calls()); !slices.Equal(got, []string{"Promote"}) {
		t.Fatalf("calls = %v, want just the promotion", h.calls())
	}
}

func TestCrashAfterRemoveDeletesTheLeftoverPod(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 2 })
	victim := "e-2"
	if leaderOf(h) == victim {
		victim = "e-1"
	}
	id := memberID(h, victim)
	if err := h.etcd.Remove(h.ctx, id); err != nil {
		t.Fatal(err)
	}
	h.etcd.ResetCalls()
	h.settle()
	if len(h.calls()) != 0 {
		t.Fatalf("a second member was removed: %v", h.calls())
	}
	if h.pods()[victim] != nil || len(h.pods()) != 2 {
		t.Fatalf("pods = %v, want %s deleted", h.podNames(), victim)
	}
	if next := h.cluster().Status.NextMemberIndex; next != 3 {
		t.Fatalf("nextMemberIndex = %d, want 3 (names are never reused)", next)
	}
}

func TestCrashMidBootstrapFinishesTheSameInitialCluster(t *testing.T) {
	h := newHarness(t, spec3())
	h.reconcile()
	initial := arg(h.pods()["e-0"], "initial-cluster")
	// Two of three bootstrap Pods are lost before the cluster formed, and the user asks for 5 meanwhile.
	h.deletePod("e-1")
	h.deletePod("e-2")
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 5 })
	h.reconcile()
	for _, n := range []string{"e-1", "e-2"} {
		p := h.pods()[n]
		if p == nil || arg(p, "initial-cluster") != initial {
			t.Fatalf("%s not recreated with the original initial cluster %q", n, initial)
		}
	}
	if len(h.pods()) != 3 {
		t.Fatalf("bootstrap must finish with its initial members before scaling: %v", h.podNames())
	}
	h.settle()
	if got := h.cluster().Status.ReadyMembers; got != 5 {
		t.Fatalf("ready = %d, want 5", got)
	}
}

func TestMemberOnALostNodeIsReplaced(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := nonLeader(h)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-"}}
	must(t, h.c.Create(h.ctx, node))
	t.Cleanup(func() { _ = h.c.Delete(h.ctx, node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	must(t, h.c.Status().Update(h.ctx, node))
	// Bind the victim's Pod to the node that stopped reporting, and let its member go silent.
	p := h.pods()[victim]
	must(t, h.c.SubResource("binding").Create(h.ctx, p, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	}))
	h.etcd.SetDown(victim, true)
	h.reconcile()
	if q := h.pods()[victim]; q != nil && q.UID == p.UID && q.DeletionTimestamp == nil {
		t.Fatalf("Pod on the lost node was not deleted")
	}
	h.settle()
	if names := h.podNames(); len(names) != 3 || slices.Contains(names, victim) {
		t.Fatalf("pods = %v, want %s replaced", names, victim)
	}
}

func TestPVCOwnershipFollowsRetentionPolicy(t *testing.T) {
	s := spec3()
	s.Storage = etcdv1.StorageSpec{Kind: etcdv1.StoragePersistent, Size: ptr.To(resource.MustParse("1Gi")),
		RetentionPolicy: &etcdv1.PVCRetentionPolicy{WhenScaled: etcdv1.PVCDelete, WhenDeleted: etcdv1.PVCDelete}}
	h := newHarness(t, s)
	h.settle()
	owned := func() int {
		var list corev1.PersistentVolumeClaimList
		must(t, h.c.List(h.ctx, &list, client.InNamespace(h.ns)))
		n := 0
		for i := range list.Items {
			if metav1.GetControllerOf(&list.Items[i]) != nil {
				n++
			}
		}
		return n
	}
	if got := owned(); got != 3 {
		t.Fatalf("%d owned PVCs, want 3 with whenDeleted: Delete", got)
	}
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Storage.RetentionPolicy.WhenDeleted = etcdv1.PVCRetain })
	h.reconcile()
	if got := owned(); got != 0 {
		t.Fatalf("%d owned PVCs after switching to Retain, want 0", got)
	}
	// Scale-down with whenScaled: Delete removes the claim of the removed member.
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 1 })
	h.settle()
	var list corev1.PersistentVolumeClaimList
	must(t, h.c.List(h.ctx, &list, client.InNamespace(h.ns)))
	// Without kube-controller-manager the pvc-protection finalizer keeps deleted claims Terminating.
	live := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	if live != 1 {
		t.Fatalf("%d PVCs not being deleted after scale-down to 1, want 1", live)
	}
}

func TestMetricsReportClusterGauges(t *testing.T) {
	h := newHarness(t, spec3())
	h.r.SetupMetricsForTest()
	h.settle()
	for name, want := range map[string]float64{
		"etcd_operator_cluster_members":         3,
		"etcd_operator_cluster_healthy_members": 3,
		"etcd_operator_cluster_learner_present": 0,
	} {
		if got := gauge(t, name, h.ns); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := gauge(t, "etcd_operator_member_db_size_bytes", h.ns); got <= 0 {
		t.Errorf("db size gauge = %v", got)
	}
	leader := leaderOf(h)
	for _, m := range h.cluster().Status.Members {
		if m.Name != leader {
			must(t, h.etcd.MoveLeader(h.ctx, memberID(h, m.Name)))
			break
		}
	}
	h.reconcile()
	if got := gauge(t, "etcd_operator_cluster_leader_changes_seen_total", h.ns); got != 1 {
		t.Errorf("leader changes seen = %v, want 1", got)
	}
}

// gauge sums a metric's series for one namespace from the controller-runtime registry.
func gauge(t *testing.T, name, ns string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

func memberID(h *harness, name string) uint64 {
	for _, m := range h.cluster().Status.Members {
		if m.Name == name {
			id, err := strconv.ParseUint(m.ID, 16, 64)
			must(h.t, err)
			return id
		}
	}
	h.t.Fatalf("no member %s", name)
	return 0
}
