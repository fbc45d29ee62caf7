package controller_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/controller"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient/etcdfake"
	"github.com/quorumkit/etcd-operator/operator/internal/testenv"
)

// These tests run the reconciler against a real kube-apiserver (envtest). envtest has no kubelet,
// scheduler or garbage collector, so the harness plays the kubelet: it marks Pods running and starts
// the matching members in an etcd fake (there is no etcd process to talk to without Pods). The real
// etcd client is tested against real etcd in package etcdclient.

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

type harness struct {
	t    *testing.T
	ctx  context.Context
	c    client.Client
	r    *controller.Reconciler
	etcd *etcdfake.Cluster // nil until the bootstrap members start
	rec  *events.FakeRecorder
	ns   string
	key  client.ObjectKey
}

func newHarness(t *testing.T, spec etcdv1.EtcdClusterSpec) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	// Member Pods must pass the restricted Pod Security Standard: the API server's admission checks it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	must(t, env.Client.Create(ctx, ns))
	h := &harness{t: t, ctx: ctx, c: env.Client, rec: events.NewFakeRecorder(1000), ns: ns.Name,
		key: client.ObjectKey{Namespace: ns.Name, Name: "e"}}
	h.r = &controller.Reconciler{Client: env.Client, Recorder: h.rec, Objects: desired.DefaultConfig(), Resync: 10 * time.Second,
		Etcd: func(cfg etcdclient.Config) (etcdclient.Client, error) {
			if h.etcd == nil {
				return unreachable{}, nil
			}
			c, err := h.etcd.Factory()(cfg)
			return versionFromImage{Client: c, h: h}, err
		}}
	cluster := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns.Name}, Spec: spec}
	must(t, h.c.Create(ctx, cluster))
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (h *harness) reconcile() ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key})
	if err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	return res
}

// settle reconciles, playing the kubelet between passes, until the cluster reports Progressing=False.
func (h *harness) settle() {
	h.t.Helper()
	for range 40 {
		h.reconcile()
		h.runPods()
		cl := h.cluster()
		if c := findCondition(cl, etcdv1.ConditionProgressing); c != nil && c.Status == metav1.ConditionFalse &&
			cl.Status.ObservedGeneration == cl.Generation {
			return
		}
	}
	cl := h.cluster()
	h.t.Fatalf("cluster did not settle: %+v\ncalls: %v", cl.Status.Conditions, h.calls())
}

func (h *harness) cluster() *etcdv1.EtcdCluster {
	h.t.Helper()
	var cl etcdv1.EtcdCluster
	must(h.t, h.c.Get(h.ctx, h.key, &cl))
	return &cl
}

func (h *harness) update(f func(*etcdv1.EtcdCluster)) {
	h.t.Helper()
	cl := h.cluster()
	f(cl)
	must(h.t, h.c.Update(h.ctx, cl))
}

func (h *harness) pods() map[string]*corev1.Pod {
	h.t.Helper()
	var list corev1.PodList
	must(h.t, h.c.List(h.ctx, &list, client.InNamespace(h.ns)))
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func (h *harness) podNames() []string {
	var names []string
	for n := range h.pods() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// runPods plays the kubelet: every Pending Pod becomes Running and Ready, and its member starts in the
// etcd fake. The bootstrap members form the fake cluster together when the first of them runs.
func (h *harness) runPods() {
	h.t.Helper()
	pods := h.pods()
	if h.etcd == nil {
		var names, peers, clients []string
		for _, p := range pods {
			if p.Annotations[etcdv1.AnnotationInitialState] == "new" {
				names, peers, clients = append(names, p.Name), append(peers, arg(p, "initial-advertise-peer-urls")), append(clients, arg(p, "advertise-client-urls"))
			}
		}
		if len(names) == 0 {
			return
		}
		h.etcd = etcdfake.Seed(names, peers, clients)
		h.etcd.SetAutoCatchUp(true)
	}
	// A member whose Pod is gone has no process left.
	members, _ := h.etcd.MemberList(h.ctx)
	for _, m := range members {
		if m.Name != "" && pods[m.Name] == nil {
			h.etcd.SetDown(m.Name, true)
		}
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		h.setPhase(p, corev1.PodRunning)
		_ = h.etcd.Start(arg(p, "initial-advertise-peer-urls"), p.Name, arg(p, "advertise-client-urls"))
	}
}

func (h *harness) setPhase(p *corev1.Pod, phase corev1.PodPhase) {
	h.t.Helper()
	p.Status.Phase = phase
	ready := corev1.ConditionFalse
	if phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	must(h.t, h.c.Status().Update(h.ctx, p))
}

// deletePod removes a Pod outright, as the kubelet would after the grace period.
func (h *harness) deletePod(name string) {
	h.t.Helper()
	must(h.t, h.c.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}, client.GracePeriodSeconds(0)))
}

func (h *harness) calls() []string {
	if h.etcd == nil {
		return nil
	}
	return h.etcd.Calls()
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func arg(p *corev1.Pod, flag string) string {
	for _, a := range p.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			return v
		}
	}
	return ""
}

func findCondition(cl *etcdv1.EtcdCluster, t string) *metav1.Condition {
	for i := range cl.Status.Conditions {
		if cl.Status.Conditions[i].Type == t {
			return &cl.Status.Conditions[i]
		}
	}
	return nil
}

func wantCondition(t *testing.T, cl *etcdv1.EtcdCluster, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := findCondition(cl, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, cl.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	if c.ObservedGeneration != cl.Generation {
		t.Errorf("%s observedGeneration %d, want %d", typ, c.ObservedGeneration, cl.Generation)
	}
}

// unreachable is the etcd client before any member runs: every call fails as a dial would.
type unreachable struct{}

var errUnreachable = fmt.Errorf("connection refused")

func (unreachable) MemberList(context.Context) ([]etcdclient.Member, error) {
	return nil, errUnreachable
}
func (unreachable) AddLearner(context.Context, []string) (etcdclient.Member, error) {
	return etcdclient.Member{}, errUnreachable
}
func (unreachable) Promote(context.Context, uint64) error    { return errUnreachable }
func (unreachable) Remove(context.Context, uint64) error     { return errUnreachable }
func (unreachable) MoveLeader(context.Context, uint64) error { return errUnreachable }
func (unreachable) Status(context.Context, string) (etcdclient.Status, error) {
	return etcdclient.Status{}, errUnreachable
}
func (unreachable) Health(context.Context, string, bool) error { return errUnreachable }
func (unreachable) Close() error                               { return nil }

// versionFromImage reports each member's etcd version from its Pod's image, as a container restarted
// on a new image would: the fake itself always answers one version.
type versionFromImage struct {
	etcdclient.Client
	h *harness
}

func (v versionFromImage) Status(ctx context.Context, endpoint string) (etcdclient.Status, error) {
	st, err := v.Client.Status(ctx, endpoint)
	if err != nil {
		return st, err
	}
	// Called from the reconciler's goroutines (the manager's too), so no t.Fatal here: a failed list
	// just leaves the fake's version.
	var pods corev1.PodList
	_ = v.h.c.List(ctx, &pods, client.InNamespace(v.h.ns))
	for i := range pods.Items {
		if p := &pods.Items[i]; arg(p, "advertise-client-urls") == endpoint {
			img := p.Spec.Containers[0].Image
			st.Version = img[strings.LastIndex(img, ":v")+2:]
		}
	}
	return st, nil
}
