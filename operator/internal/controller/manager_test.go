package controller_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/controller"
)

// TestRunsUnderTheManager wires the reconciler the way main does (watches, label-filtered cache) and
// lets the manager drive it: a new cluster becomes Available with no direct Reconcile calls, only the
// harness playing the kubelet.
func TestRunsUnderTheManager(t *testing.T) {
	h := newHarness(t, spec3())
	scheme, err := controller.NewScheme()
	must(t, err)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: controller.CacheByObject(), DefaultNamespaces: map[string]cache.Config{h.ns: {}}}})
	must(t, err)
	r := *h.r
	r.Client = mgr.GetClient()
	r.Resync = time.Second
	must(t, r.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(h.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = mgr.Start(ctx) }()
	// Stop the manager and wait for reconciles in flight: they use the harness, which must not outlive
	// the test.
	defer func() { cancel(); <-stopped }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		h.runPods()
		cl := h.cluster()
		if c := findCondition(cl, etcdv1.ConditionAvailable); c != nil && c.Status == metav1.ConditionTrue && cl.Status.ReadyMembers == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Available under the manager: %+v", cl.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(h.pods()); n != 3 {
		t.Fatalf("%d pods, want 3", n)
	}
}
