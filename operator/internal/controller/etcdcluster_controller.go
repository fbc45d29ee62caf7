// Package controller is the only code that talks to the Kubernetes API. The EtcdCluster reconciler
// observes, asks the planner for one step, takes it, and writes status once.
package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// Reconciler runs EtcdClusters.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Etcd opens etcd clients; tests pass a fake because envtest runs no Pods.
	Etcd    etcdclient.Factory
	Objects desired.Config
	// Resync is how often a settled cluster is checked again; etcd health has no watch.
	Resync time.Duration
	// MaxConcurrentReconciles bounds how many clusters are reconciled at once.
	MaxConcurrentReconciles int
	// AfterAction, if set, runs after each step that succeeded and before status is written. The
	// end-to-end suite uses it to kill the operator between membership steps (see crash.go in
	// cmd/etcd-operator); it is nil in normal operation.
	AfterAction func(plan.Action)
	metrics     *clusterMetrics
}

// Least privilege: Services and PDBs are only server-side applied, which needs create besides patch when
// the object does not exist yet (the end-to-end suite, running the operator with exactly this RBAC,
// caught that patch alone is refused); the EtcdCluster itself is never written, only its status; Nodes
// are read to tell a lost node.
// +kubebuilder:rbac:groups=etcd.quorumkit.dev,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.quorumkit.dev,resources=etcdclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile is one pass: observe, apply the desired Services and PDB, plan one step, take it, and
// write status once (deferred, so a failed step still reports what was seen).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	logger := log.FromContext(ctx)
	var cluster etcdv1.EtcdCluster
	if err := r.Get(ctx, req.NamespacedName, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cluster.DeletionTimestamp != nil {
		// Owner references let the garbage collector remove Pods, Services and owned PVCs.
		return ctrl.Result{}, nil
	}

	etcd, err := r.openEtcd(&cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if cerr := etcd.Close(); cerr != nil {
			logger.V(1).Info("closing the etcd client", "error", cerr)
		}
	}()
	obs, err := r.observe(ctx, &cluster, etcd)
	if err != nil {
		return ctrl.Result{}, err
	}
	action := plan.Next(obs.plan)
	if verr := plan.CheckInvariants(obs.plan, action); verr != nil {
		// The planner is fuzzed against these rules; reaching this is a bug, and doing nothing is safe.
		logger.Error(verr, "planner proposed an unsafe action; refusing it")
		action = plan.Action{Kind: plan.Wait, Reason: etcdv1.ReasonWaiting, Refused: true,
			Message: "internal safety check refused the next step: " + verr.Error(), RequeueAfter: r.Resync}
	}
	before := cluster.DeepCopy()
	defer func() {
		if serr := r.writeStatus(ctx, before, &cluster, obs, action, err); serr != nil && err == nil {
			err = serr
		}
	}()

	if !cluster.Spec.Paused {
		if err := r.applyShared(ctx, &cluster); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.syncPVCOwnership(ctx, &cluster, obs); err != nil {
			return ctrl.Result{}, err
		}
	}
	logger.V(1).Info("planned", "action", action.Kind, "member", action.Member, "message", action.Message)
	requeue, err := r.act(ctx, &cluster, obs, etcd, action)
	if err != nil {
		return ctrl.Result{}, err
	}
	// requeue > 0 means etcd asked to retry later: the step was not taken.
	if r.AfterAction != nil && requeue == 0 && action.Kind != plan.None && action.Kind != plan.Wait {
		r.AfterAction(action)
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(action, requeue, obs.listErr != nil || unhealthy(obs.plan) != "")}, nil
}

// requeueAfter: soon after a step (etcd changes fire no watch), at the action's pace while waiting, and
// at the resync interval when settled. A cluster with nothing to do but an unhealthy member (a partition,
// a member catching up) is looked at as often as one in progress: its recovery shows only in etcd, which
// sends no events, and status should say so promptly.
func (r *Reconciler) requeueAfter(a plan.Action, override time.Duration, unhealthy bool) time.Duration {
	switch {
	case override > 0:
		return override
	case a.Kind == plan.None && unhealthy:
		return min(plan.PollProgress, r.Resync)
	case a.Kind == plan.None:
		return r.Resync
	case a.Kind == plan.Wait:
		return a.RequeueAfter
	}
	return stepRequeue
}

// stepRequeue is the pause after a step before looking again; short, since etcd reports no events.
const stepRequeue = 200 * time.Millisecond

// openEtcd opens a client to the members last seen (all but the excluded ones), or to the bootstrap
// members before any was seen.
func (r *Reconciler) openEtcd(cluster *etcdv1.EtcdCluster, exclude ...string) (etcdclient.Client, error) {
	dns := r.Objects.DNS(cluster)
	var endpoints []string
	for _, m := range cluster.Status.Members {
		if !slices.Contains(exclude, m.Name) {
			endpoints = append(endpoints, dns.MemberClientURL(m.Name))
		}
	}
	if len(endpoints) == 0 {
		// Before the first status, the bootstrap members are the ones to ask.
		for i := range int(cluster.Spec.Size) {
			endpoints = append(endpoints, dns.MemberClientURL(etcdv1.MemberName(cluster.Name, i)))
		}
	}
	c, err := r.Etcd(etcdclient.Config{Endpoints: endpoints})
	if err != nil {
		return nil, fmt.Errorf("open etcd client for %s: %w", cluster.Name, err)
	}
	return c, nil
}

// applyShared server-side-applies the objects every cluster has: Services and the PDB.
func (r *Reconciler) applyShared(ctx context.Context, cluster *etcdv1.EtcdCluster) error {
	objs := []client.Object{desired.PeerService(cluster), desired.ClientService(cluster), desired.PodDisruptionBudget(cluster)}
	for _, obj := range objs {
		if err := r.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// syncPVCOwnership keeps member PVCs' owner reference in line with retentionPolicy.whenDeleted, which
// may change after the claims exist: owned claims are garbage-collected with the cluster.
func (r *Reconciler) syncPVCOwnership(ctx context.Context, cluster *etcdv1.EtcdCluster, obs *observation) error {
	want := desired.PVCOwned(cluster)
	for _, pvc := range obs.pvcs {
		owned := metav1.IsControlledBy(pvc, cluster)
		if owned == want || (metav1.GetControllerOf(pvc) != nil && !owned) {
			continue // already right, or controlled by someone else: leave it alone
		}
		patched := pvc.DeepCopy()
		if want {
			patched.OwnerReferences = append(patched.OwnerReferences, desired.ControllerRef(cluster))
		} else {
			patched.OwnerReferences = slices.DeleteFunc(patched.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == cluster.UID })
		}
		if err := r.Patch(ctx, patched, client.MergeFrom(pvc)); err != nil {
			return fmt.Errorf("set owner of PVC %s: %w", pvc.Name, err)
		}
	}
	return nil
}

// CacheByObject limits the informers of the kinds the operator owns to its own objects: without it the
// manager would cache every Pod, Service, PVC and PDB of the cluster.
func CacheByObject() map[client.Object]cache.ByObject {
	own := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{etcdv1.LabelManagedBy: etcdv1.ManagedBy})}
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   own,
		&corev1.PersistentVolumeClaim{}: own,
		&corev1.Service{}:               own,
		&policyv1.PodDisruptionBudget{}: own,
	}
}

// SetupMetricsForTest wires the metrics without a manager, for tests that call Reconcile directly.
func (r *Reconciler) SetupMetricsForTest() { r.metrics = newClusterMetrics() }

// SetupWithManager registers the controller and what it watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.metrics = newClusterMetrics()
	r.Etcd = etcdclient.Metered(r.Etcd, r.metrics.etcdRequests)
	if r.Resync == 0 {
		r.Resync = 10 * time.Second
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(clusterOfLabeled)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles)}).
		Complete(r)
}

// clusterOfLabeled maps an object with our cluster label to its cluster (retained PVCs have no owner).
func clusterOfLabeled(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[etcdv1.LabelCluster]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
