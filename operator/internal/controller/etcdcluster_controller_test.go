package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

func spec3() etcdv1.EtcdClusterSpec {
	return etcdv1.EtcdClusterSpec{Size: 3, Version: "3.6.7"}
}

func TestCreateMakesMembersServicesAndPDB(t *testing.T) {
	h := newHarness(t, spec3())
	h.reconcile()

	cl := h.cluster()
	wantCondition(t, cl, etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonBootstrapping)
	wantCondition(t, cl, etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonCreating)
	if got := h.podNames(); !slices.Equal(got, []string{"e-0", "e-1", "e-2"}) {
		t.Fatalf("pods = %v, want all three initial members at once", got)
	}
	for name, p := range h.pods() {
		assertOwned(t, cl, p)
		if got := arg(p, "initial-cluster-state"); got != "new" {
			t.Errorf("%s initial-cluster-state = %q, want new", name, got)
		}
		if got := strings.Count(arg(p, "initial-cluster"), "="); got != 3 {
			t.Errorf("%s initial-cluster has %d members: %s", name, got, arg(p, "initial-cluster"))
		}
		if got := arg(p, "initial-cluster-token"); got != string(cl.UID) {
			t.Errorf("%s token = %q, want the cluster UID", name, got)
		}
	}

	var peer, clientSvc corev1.Service
	must(t, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "e-peer"}, &peer))
	must(t, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "e"}, &clientSvc))
	if peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("peer service must be headless and publish not-ready addresses: %+v", peer.Spec)
	}
	if clientSvc.Spec.ClusterIP == corev1.ClusterIPNone || clientSvc.Spec.PublishNotReadyAddresses {
		t.Errorf("client service must be a normal ClusterIP service of ready members: %+v", clientSvc.Spec)
	}
	var pdb policyv1.PodDisruptionBudget
	must(t, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "e"}, &pdb))
	if pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable = %v, want 1 for 3 members", pdb.Spec.MaxUnavailable)
	}
	for _, obj := range []client.Object{&peer, &clientSvc, &pdb} {
		assertOwned(t, cl, obj)
	}

	h.settle()
	cl = h.cluster()
	wantCondition(t, cl, etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy)
	wantCondition(t, cl, etcdv1.ConditionProgressing, metav1.ConditionFalse, etcdv1.ReasonReconciled)
	wantCondition(t, cl, etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonHealthy)
	st := cl.Status
	if st.ReadyMembers != 3 || st.Replicas != 3 || len(st.Members) != 3 || st.CurrentVersion != "3.6.7" || st.ClusterID == "" || st.LeaderID == "" {
		t.Fatalf("status = %+v", st)
	}
	if st.Selector == "" || st.NextMemberIndex != 3 || !strings.HasPrefix(st.ClientURL, "http://e."+h.ns+".svc") {
		t.Errorf("selector/next index/client URL: %q %d %q", st.Selector, st.NextMemberIndex, st.ClientURL)
	}
	leaders := 0
	for _, m := range st.Members {
		if m.Leader {
			leaders++
		}
		if !m.Healthy || m.Role != etcdv1.RoleVoter || m.ID == "" || m.PeerURL == "" || m.ClientURL == "" || m.DBSizeBytes == 0 {
			t.Errorf("member status incomplete: %+v", m)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders in status", leaders)
	}
	if len(h.calls()) != 0 {
		t.Errorf("a bootstrap needs no membership calls, got %v", h.calls())
	}
	if ev := h.events(); !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, "MembersCreated") }) {
		t.Errorf("no MembersCreated event in %v", ev)
	}
}

func assertOwned(t *testing.T, cl *etcdv1.EtcdCluster, obj client.Object) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != cl.UID || ref.Kind != "EtcdCluster" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("%s %s is not controlled by the cluster (garbage collection would miss it): %+v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), obj.GetOwnerReferences())
	}
}

func TestScaleUpThroughOneLearnerAtATime(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 5 })

	h.reconcile() // adds learner e-3
	if got := h.calls(); len(got) != 1 || !strings.HasPrefix(got[0], "AddLearner [http://e-3.e-peer.") {
		t.Fatalf("calls = %v, want one AddLearner for e-3", got)
	}
	h.reconcile() // creates its Pod
	p := h.pods()["e-3"]
	if p == nil {
		t.Fatal("no Pod for the learner")
	}
	if arg(p, "initial-cluster-state") != "existing" || strings.Count(arg(p, "initial-cluster"), "=") != 4 {
		t.Fatalf("joining member args: state %q cluster %q", arg(p, "initial-cluster-state"), arg(p, "initial-cluster"))
	}
	h.reconcile() // Pod not running yet: no second learner
	if n := len(h.calls()); n != 1 {
		t.Fatalf("a second membership change happened before the learner ran: %v", h.calls())
	}
	h.settle()
	cl := h.cluster()
	if cl.Status.ReadyMembers != 5 || cl.Status.Replicas != 5 {
		t.Fatalf("status after scale-up: %+v", cl.Status)
	}
	want := []string{"AddLearner", "Promote", "AddLearner", "Promote"}
	if got := verbs(h.calls()); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", h.calls(), want)
	}
}

func TestScaleDownRemovesNewestNonLeaderThenItsPod(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 1 })
	h.settle()
	if got := h.podNames(); len(got) != 1 {
		t.Fatalf("pods after scale-down to 1: %v", got)
	}
	leader := h.etcd.Leader()
	for _, c := range h.calls() {
		if c == fmt.Sprintf("Remove %x", leader) {
			t.Fatalf("the leader was removed: %v", h.calls())
		}
	}
	if got := verbs(h.calls()); !slices.Equal(got, []string{"Remove", "Remove"}) && !slices.Equal(got, []string{"Remove", "MoveLeader", "Remove"}) {
		t.Fatalf("calls = %v", h.calls())
	}
	var pdb policyv1.PodDisruptionBudget
	must(t, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "e"}, &pdb))
	if pdb.Spec.MaxUnavailable.IntValue() != 0 {
		t.Errorf("PDB maxUnavailable = %v, want 0 for one member", pdb.Spec.MaxUnavailable)
	}
	survivor := h.podNames()[0]
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 3 })
	h.settle()
	names := h.podNames()
	want := []string{survivor, "e-3", "e-4"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("scale back up must use fresh names: got %v, want %v", names, want)
	}
}

func TestEphemeralMemberLostIsReplacedByAFreshOne(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := nonLeader(h)
	h.etcd.SetDown(victim, true)
	h.deletePod(victim)
	h.settle()
	names := h.podNames()
	if len(names) != 3 || slices.Contains(names, victim) || !slices.Contains(names, "e-3") {
		t.Fatalf("pods = %v, want %s replaced by e-3", names, victim)
	}
	if got := verbs(h.calls()); !slices.Equal(got, []string{"Remove", "AddLearner", "Promote"}) {
		t.Fatalf("calls = %v", h.calls())
	}
	ev := strings.Join(h.events(), "\n")
	for _, want := range []string{"MemberRemoved", "LearnerAdded", "LearnerPromoted"} {
		if !strings.Contains(ev, want) {
			t.Errorf("no %s event in:\n%s", want, ev)
		}
	}
}

func TestPersistentMemberComesBackOnItsData(t *testing.T) {
	s := spec3()
	s.Storage = etcdv1.StorageSpec{Kind: etcdv1.StoragePersistent, Size: ptr.To(resource.MustParse("1Gi"))}
	h := newHarness(t, s)
	h.settle()
	var pvcs corev1.PersistentVolumeClaimList
	must(t, h.c.List(h.ctx, &pvcs, client.InNamespace(h.ns)))
	if len(pvcs.Items) != 3 {
		t.Fatalf("%d PVCs, want 3", len(pvcs.Items))
	}
	for _, p := range pvcs.Items {
		if metav1.GetControllerOf(&p) != nil {
			t.Errorf("PVC %s is owned by default; whenDeleted defaults to Retain", p.Name)
		}
	}
	victim := nonLeader(h)
	h.etcd.SetDown(victim, true)
	h.deletePod(victim)
	h.reconcile()
	if h.pods()[victim] == nil {
		t.Fatalf("Pod %s was not recreated under the same name", victim)
	}
	h.settle()
	if len(h.calls()) != 0 {
		t.Fatalf("recreating a member on its data needs no membership change, got %v", h.calls())
	}
}

func TestPausedClusterIsLeftAloneButReported(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Paused = true; c.Spec.Size = 5 })
	victim := nonLeader(h)
	h.etcd.SetDown(victim, true)
	h.deletePod(victim)
	for range 3 {
		h.reconcile()
	}
	if len(h.calls()) != 0 || h.pods()[victim] != nil || len(h.pods()) != 2 {
		t.Fatalf("paused cluster changed: calls %v pods %v", h.calls(), h.podNames())
	}
	cl := h.cluster()
	wantCondition(t, cl, etcdv1.ConditionProgressing, metav1.ConditionFalse, etcdv1.ReasonPaused)
	wantCondition(t, cl, etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonMembersUnhealthy)
	if cl.Status.ReadyMembers != 2 {
		t.Errorf("status not reported while paused: ready %d", cl.Status.ReadyMembers)
	}
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Paused = false })
	h.settle()
	if got := h.cluster().Status.ReadyMembers; got != 5 {
		t.Fatalf("after resume: %d ready, want 5", got)
	}
}

func TestScaleDownRefusedWithoutQuorum(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	for _, m := range h.cluster().Status.Members {
		if !m.Leader {
			h.etcd.SetDown(m.Name, true)
		}
	}
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Size = 1 })
	h.reconcile()
	h.reconcile()
	if len(h.calls()) != 0 {
		t.Fatalf("membership changed without quorum: %v", h.calls())
	}
	cl := h.cluster()
	wantCondition(t, cl, etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonQuorumLost)
	wantCondition(t, cl, etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonQuorumLost)
}

func TestRollingSettingsChangeRecreatesLeaderLast(t *testing.T) {
	s := spec3()
	s.Storage = etcdv1.StorageSpec{Kind: etcdv1.StoragePersistent, Size: ptr.To(resource.MustParse("1Gi"))}
	h := newHarness(t, s)
	h.settle()
	leaderName := leaderOf(h)
	h.update(func(c *etcdv1.EtcdCluster) { c.Spec.Etcd.SnapshotCount = ptr.To[int64](5000) })
	var order []string
	for range 60 {
		before := h.pods()
		h.reconcile()
		after := h.pods()
		for name, p := range before {
			if q := after[name]; q == nil || q.UID != p.UID {
				order = append(order, name)
			}
		}
		h.runPods()
		cl := h.cluster()
		if c := findCondition(cl, etcdv1.ConditionProgressing); c.Status == metav1.ConditionFalse && cl.Status.ObservedGeneration == cl.Generation {
			break
		}
	}
	if len(order) != 3 || order[2] != leaderName {
		t.Fatalf("recreate order %v, want 3 members with the leader %s last", order, leaderName)
	}
	for name, p := range h.pods() {
		if !slices.Contains(p.Spec.Containers[0].Args, "--snapshot-count=5000") {
			t.Errorf("%s still runs the old settings", name)
		}
	}
	if !slices.Contains(verbs(h.calls()), "MoveLeader") {
		t.Errorf("leadership was not moved before recreating the leader: %v", h.calls())
	}
}

func nonLeader(h *harness) string {
	for _, m := range h.cluster().Status.Members {
		if !m.Leader {
			return m.Name
		}
	}
	h.t.Fatal("no non-leader")
	return ""
}

func leaderOf(h *harness) string {
	for _, m := range h.cluster().Status.Members {
		if m.Leader {
			return m.Name
		}
	}
	h.t.Fatal("no leader")
	return ""
}

func verbs(calls []string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i], _, _ = strings.Cut(c, " ")
	}
	return out
}

// Before any member runs nothing can answer etcd calls, and waiting for the member list to time out
// would hold up creating the Pods: the first reconcile does not ask.
func TestFirstReconcileCreatesPodsWithoutAskingEtcd(t *testing.T) {
	h := newHarness(t, spec3())
	asked := &countingUnreachable{}
	h.r.Etcd = func(etcdclient.Config) (etcdclient.Client, error) { return asked, nil }
	h.reconcile()
	if got := h.podNames(); len(got) != 3 {
		t.Fatalf("pods = %v, want the three initial members", got)
	}
	if asked.memberLists != 0 {
		t.Errorf("the first reconcile asked etcd for the member list %d times before any member ran", asked.memberLists)
	}
	h.setPhase(h.pods()["e-0"], corev1.PodRunning)
	h.reconcile()
	if asked.memberLists == 0 {
		t.Errorf("with a member Pod running the reconcile must ask etcd whether the cluster formed")
	}
}

type countingUnreachable struct {
	unreachable
	memberLists int
}

func (c *countingUnreachable) MemberList(ctx context.Context) ([]etcdclient.Member, error) {
	c.memberLists++
	return c.unreachable.MemberList(ctx)
}

// Between the initial members forming a cluster and a quorum of their Pods turning Ready, the cluster is
// being created: Bootstrapping, not a lost quorum. Once it was Available, the same state is QuorumLost.
func TestFormingClusterIsBootstrappingNotQuorumLost(t *testing.T) {
	h := newHarness(t, spec3())
	h.reconcile() // creates the initial members
	h.runPods()
	notReady := func(names ...string) {
		for _, n := range names {
			p := h.pods()[n]
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			must(t, h.c.Status().Update(h.ctx, p))
		}
	}
	notReady("e-0", "e-1")
	h.reconcile()
	cl := h.cluster()
	wantCondition(t, cl, etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonBootstrapping)
	wantCondition(t, cl, etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonBootstrapping)
	if c := findCondition(cl, etcdv1.ConditionAvailable); !strings.Contains(c.Message, "1 of 3 are healthy and Ready, 2 needed") {
		t.Errorf("Available message = %q, want the count of healthy and Ready members", c.Message)
	}

	for _, n := range []string{"e-0", "e-1"} {
		h.setPhase(h.pods()[n], corev1.PodRunning) // Ready again
	}
	h.settle()
	wantCondition(t, h.cluster(), etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy)
	notReady("e-0", "e-1")
	h.reconcile()
	wantCondition(t, h.cluster(), etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonQuorumLost)
	wantCondition(t, h.cluster(), etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonQuorumLost)
}

// A settled, healthy cluster is looked at again at the resync interval; one with an unhealthy member and
// nothing to do (a partitioned member, say) much sooner, since its recovery sends no event.
func TestUnhealthyClusterIsCheckedSoonerThanResync(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	if res := h.reconcile(); res.RequeueAfter != h.r.Resync {
		t.Fatalf("healthy cluster: requeue after %v, want the resync interval %v", res.RequeueAfter, h.r.Resync)
	}
	h.etcd.SetDown(nonLeader(h), true)
	if res := h.reconcile(); res.RequeueAfter <= 0 || res.RequeueAfter > plan.PollProgress {
		t.Fatalf("cluster with a member down: requeue after %v, want at most %v", res.RequeueAfter, plan.PollProgress)
	}
}

// A member whose Pod is gone has no process: asking it would cost the check timeout on every reconcile
// before it can be replaced. It is not asked, counts as unhealthy, and its replacement starts at once.
func TestMemberWithoutPodIsNotAsked(t *testing.T) {
	h := newHarness(t, spec3())
	h.settle()
	victim := nonLeader(h)
	victimURL := arg(h.pods()[victim], "advertise-client-urls")
	h.deletePod(victim)
	asked := &statusRecorder{}
	factory := h.r.Etcd
	h.r.Etcd = func(cfg etcdclient.Config) (etcdclient.Client, error) {
		c, err := factory(cfg)
		asked.Client = c
		return asked, err
	}
	h.reconcile()
	if slices.Contains(asked.endpoints, victimURL) {
		t.Errorf("asked %s, whose Pod is gone, for its status: %v", victim, asked.endpoints)
	}
	if len(asked.endpoints) != 2 {
		t.Errorf("asked %v, want the two members with Pods", asked.endpoints)
	}
	for _, m := range h.cluster().Status.Members {
		if m.Name == victim && m.Healthy {
			t.Errorf("%s has no Pod but is reported healthy", victim)
		}
	}
	if ev := strings.Join(h.events(), "\n"); !strings.Contains(ev, "MemberRemoved") {
		t.Errorf("the member without a Pod was not removed for replacement in the same pass; events:\n%s", ev)
	}
}

type statusRecorder struct {
	etcdclient.Client
	mu        sync.Mutex
	endpoints []string
}

func (s *statusRecorder) Status(ctx context.Context, endpoint string) (etcdclient.Status, error) {
	s.mu.Lock()
	s.endpoints = append(s.endpoints, endpoint)
	s.mu.Unlock()
	return s.Client.Status(ctx, endpoint)
}
