package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// etcdCallTimeout bounds one membership call.
const etcdCallTimeout = 5 * time.Second

// Event reasons, one per action the operator takes, plus refusals.
const (
	EventMembersCreated  = "MembersCreated"
	EventPodCreated      = "MemberPodCreated"
	EventLearnerAdded    = "LearnerAdded"
	EventLearnerPromoted = "LearnerPromoted"
	EventLeaderMoved     = "LeaderMoved"
	EventMemberRemoved   = "MemberRemoved"
	EventPodDeleted      = "MemberPodDeleted"
	EventPVCDeleted      = "MemberPVCDeleted"
	EventMemberUpgraded  = "MemberUpgraded"
	EventChangeRefused   = "ChangeRefused"
	EventActionFailed    = "ActionFailed"
)

// act takes one planned step. It returns an explicit requeue delay when the step itself says when to
// look again (a learner not caught up yet).
func (r *Reconciler) act(ctx context.Context, cluster *etcdv1.EtcdCluster, obs *observation, etcd etcdclient.Client, a plan.Action) (time.Duration, error) {
	var err error
	var event string
	switch a.Kind {
	case plan.None, plan.Wait:
		return 0, nil
	case plan.Bootstrap:
		event, err = EventMembersCreated, r.bootstrap(ctx, cluster, obs, a)
	case plan.CreatePod:
		event, err = EventPodCreated, r.createMember(ctx, cluster, obs, a.Member, "existing", existingCluster(r.Objects.DNS(cluster), obs, a.Member))
	case plan.AddLearner:
		event, err = EventLearnerAdded, withEtcd(ctx, etcd, func(ctx context.Context, c etcdclient.Client) error {
			_, err := c.AddLearner(ctx, []string{r.Objects.DNS(cluster).PeerURL(a.Member)})
			return err
		})
	case plan.Promote:
		event, err = EventLearnerPromoted, withEtcd(ctx, etcd, func(ctx context.Context, c etcdclient.Client) error { return c.Promote(ctx, a.MemberID) })
	case plan.MoveLeader:
		event, err = EventLeaderMoved, withEtcd(ctx, etcd, func(ctx context.Context, c etcdclient.Client) error { return c.MoveLeader(ctx, a.TargetID) })
	case plan.RemoveMember:
		event, err = EventMemberRemoved, r.remove(ctx, cluster, a)
	case plan.DeletePod:
		event, err = EventPodDeleted, r.deletePod(ctx, obs.pods[a.Member], a.Force)
	case plan.DeletePVC:
		event, err = EventPVCDeleted, client.IgnoreNotFound(r.Delete(ctx, obs.pvcs[a.Member]))
	case plan.Upgrade:
		event, err = EventMemberUpgraded, r.upgrade(ctx, cluster, obs.pods[a.Member])
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if errors.Is(err, etcdclient.ErrLearnerNotReady) || errors.Is(err, etcdclient.ErrClusterNotReady) {
		// etcd's own "not yet": a learner still catching up, or members connected for less than etcd's
		// 5 s health interval. A normal wait, not a failure to report.
		log.FromContext(ctx).V(1).Info("etcd asks to retry later", "action", a.Kind, "member", a.Member, "reason", err.Error())
		return etcdRetry, nil
	}
	if err != nil {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventActionFailed, string(a.Kind), "%s %s failed: %v", a.Kind, a.Member, err)
		return 0, fmt.Errorf("%s %s: %w", a.Kind, a.Member, err)
	}
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, event, string(a.Kind), "%s", describe(a))
	return 0, nil
}

func describe(a plan.Action) string {
	if a.Kind == plan.Bootstrap {
		return fmt.Sprintf("%s: %s", a.Message, strings.Join(a.Members, ", "))
	}
	return fmt.Sprintf("%s: %s", a.Member, a.Message)
}

// withEtcd runs one membership call, bounded, on the reconcile's client.
func withEtcd(ctx context.Context, c etcdclient.Client, call func(context.Context, etcdclient.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	return call(ctx, c)
}

// etcdRetry is how soon a membership change etcd asked to retry is tried again.
const etcdRetry = time.Second

// remove removes a member through a client that does not talk to that member: a member serving its own
// removal stops in the middle of the reply, which would report a removal that worked as failed.
func (r *Reconciler) remove(ctx context.Context, cluster *etcdv1.EtcdCluster, a plan.Action) error {
	c, err := r.openEtcd(cluster, a.Member)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return withEtcd(ctx, c, func(ctx context.Context, c etcdclient.Client) error { return c.Remove(ctx, a.MemberID) })
}

// bootstrap creates the missing initial members, all with the same static --initial-cluster.
func (r *Reconciler) bootstrap(ctx context.Context, cluster *etcdv1.EtcdCluster, obs *observation, a plan.Action) error {
	dns := r.Objects.DNS(cluster)
	pairs := make([]string, len(a.InitialCluster))
	for i, name := range a.InitialCluster {
		pairs[i] = name + "=" + dns.PeerURL(name)
	}
	initial := strings.Join(pairs, ",")
	for _, name := range a.Members {
		if err := r.createMember(ctx, cluster, obs, name, "new", initial); err != nil {
			return err
		}
	}
	return nil
}

// existingCluster is --initial-cluster for a member joining a running cluster: every member in etcd's
// list, by the name its peer URL was built from.
func existingCluster(dns etcdv1.DNS, obs *observation, joining string) string {
	pairs := []string{}
	seen := false
	for _, m := range obs.members {
		name := memberName(m)
		seen = seen || name == joining
		pairs = append(pairs, name+"="+m.PeerURLs[0])
	}
	if !seen {
		pairs = append(pairs, joining+"="+dns.PeerURL(joining))
	}
	return strings.Join(pairs, ",")
}

// createMember creates a member's PVC (Persistent storage, if missing) and then its Pod.
func (r *Reconciler) createMember(ctx context.Context, cluster *etcdv1.EtcdCluster, obs *observation, name, state, initial string) error {
	if cluster.Spec.Storage.Kind == etcdv1.StoragePersistent && obs.pvcs[name] == nil {
		if err := r.Create(ctx, desired.MemberPVC(cluster, name)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PVC %s: %w", name, err)
		}
	}
	pod := desired.MemberPod(cluster, r.Objects, desired.Member{Name: name, InitialState: state, InitialCluster: initial})
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	return nil
}

func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod, force bool) error {
	if pod == nil {
		return nil
	}
	opts := []client.DeleteOption{client.Preconditions{UID: &pod.UID}}
	if force {
		// The node is gone: the kubelet will never confirm a graceful stop.
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	return client.IgnoreNotFound(r.Delete(ctx, pod, opts...))
}

// upgrade swaps the etcd image in place: the kubelet restarts the container on the same volume, so the
// member keeps its identity and data, with no rescheduling.
func (r *Reconciler) upgrade(ctx context.Context, cluster *etcdv1.EtcdCluster, pod *corev1.Pod) error {
	if pod == nil {
		return fmt.Errorf("no pod to upgrade")
	}
	patched := pod.DeepCopy()
	for i := range patched.Spec.Containers {
		if patched.Spec.Containers[i].Name == "etcd" {
			patched.Spec.Containers[i].Image = r.Objects.Image(cluster.Spec.Version)
		}
	}
	return r.Patch(ctx, patched, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
}

// apply server-side-applies a desired object as the operator's field manager.
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

const fieldOwner = "etcd-operator"
