package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// Timeouts for talking to etcd inside one reconcile. They bound how long a dead member can delay it.
const (
	memberListTimeout  = 3 * time.Second
	memberCheckTimeout = 2 * time.Second
)

// observation is everything one reconcile saw: Kubernetes objects, etcd's answers and the planner's view.
type observation struct {
	pods    map[string]*corev1.Pod
	pvcs    map[string]*corev1.PersistentVolumeClaim
	members []etcdclient.Member // etcd's member list; nil when unreachable
	listErr error               // why the member list failed
	checks  map[uint64]memberCheck
	// answering counts last-known members that answered a status request while the member list
	// failed: some alive means quorum is lost, none means etcd is unreachable.
	answering int
	plan      plan.Cluster
}

// memberCheck is one member's status and health answer.
type memberCheck struct {
	status    etcdclient.Status
	statusErr error
	healthErr error
}

func (c memberCheck) healthy() bool { return c.statusErr == nil && c.healthErr == nil }

// observe gathers the cluster's state. Errors reading Kubernetes are returned; etcd being unreachable
// is a state, recorded in the observation.
func (r *Reconciler) observe(ctx context.Context, cluster *etcdv1.EtcdCluster, etcd etcdclient.Client) (*observation, error) {
	o := &observation{pods: map[string]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	if err := r.listOwned(ctx, cluster, o); err != nil {
		return nil, err
	}
	if cluster.Status.ClusterID == "" && !anyPodRunning(o.pods) {
		// Not bootstrapped and no member process yet: nothing can answer, and asking would only hold
		// up the first reconcile, which creates the Pods, for the whole member list timeout.
		o.listErr = errNoMemberRunning
	} else {
		listCtx, cancel := context.WithTimeout(ctx, memberListTimeout)
		o.members, o.listErr = etcd.MemberList(listCtx)
		cancel()
	}
	if o.listErr == nil {
		o.checks = checkMembers(ctx, etcd, o.members, func(m etcdclient.Member) bool { return o.cannotAnswer(cluster, m) })
	} else {
		o.answering = countAnswering(ctx, etcd, r.Objects.DNS(cluster), cluster.Status.Members)
	}
	lost, err := r.lostNodes(ctx, o.pods)
	if err != nil {
		return nil, err
	}
	o.plan = r.planView(cluster, o, lost)
	return o, nil
}

// errNoMemberRunning stands for the member list of a cluster none of whose members runs yet.
var errNoMemberRunning = errors.New("no member Pod is running yet")

func anyPodRunning(pods map[string]*corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			return true
		}
	}
	return false
}

func (r *Reconciler) listOwned(ctx context.Context, cluster *etcdv1.EtcdCluster, o *observation) error {
	sel := client.MatchingLabels{etcdv1.LabelCluster: cluster.Name}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(cluster.Namespace), sel); err != nil {
		return fmt.Errorf("list member pods: %w", err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; metav1.IsControlledBy(p, cluster) {
			o.pods[p.Name] = p
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs, client.InNamespace(cluster.Namespace), sel); err != nil {
		return fmt.Errorf("list member PVCs: %w", err)
	}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		// Retained claims lose the owner reference, so claims are matched by label and name.
		if _, ok := etcdv1.MemberIndex(cluster.Name, p.Name); ok {
			o.pvcs[p.Name] = p
		}
	}
	return nil
}

// cannotAnswer reports whether a member is known to have no process: it is one of ours (named after the
// cluster) and its Pod is gone, terminating or not running. Asking it would only cost the check timeout,
// once per reconcile, before the planner can replace it; it stays unchecked, hence unhealthy. A member
// added by hand, with no Pod of ours, is always asked.
func (o *observation) cannotAnswer(cluster *etcdv1.EtcdCluster, m etcdclient.Member) bool {
	name := memberName(m)
	if _, ours := etcdv1.MemberIndex(cluster.Name, name); !ours {
		return false
	}
	p := o.pods[name]
	return p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning
}

// checkMembers asks every started member for its status and health, in parallel, each bounded, except
// those skip rules out.
func checkMembers(ctx context.Context, etcd etcdclient.Client, members []etcdclient.Member, skip func(etcdclient.Member) bool) map[uint64]memberCheck {
	out := make(map[uint64]memberCheck, len(members))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		if len(m.ClientURLs) == 0 || skip(m) {
			continue // never started, or no process to ask
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, memberCheckTimeout)
			defer cancel()
			var c memberCheck
			c.status, c.statusErr = etcd.Status(cctx, m.ClientURLs[0])
			if c.statusErr == nil {
				c.healthErr = etcd.Health(cctx, m.ClientURLs[0], m.IsLearner)
			}
			mu.Lock()
			out[m.ID] = c
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// countAnswering asks the last-known members for their status, in parallel, each bounded.
func countAnswering(ctx context.Context, etcd etcdclient.Client, dns etcdv1.DNS, members []etcdv1.MemberStatus) int {
	var answered atomic.Int32
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, memberCheckTimeout)
			defer cancel()
			if _, err := etcd.Status(cctx, dns.MemberClientURL(m.Name)); err == nil {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	return int(answered.Load())
}

// lostNodes names the nodes of member Pods that are gone or not ready.
func (r *Reconciler) lostNodes(ctx context.Context, pods map[string]*corev1.Pod) (map[string]bool, error) {
	lost := map[string]bool{}
	for _, p := range pods {
		name := p.Spec.NodeName
		if name == "" {
			continue
		}
		if _, seen := lost[name]; seen {
			continue
		}
		var node corev1.Node
		err := r.Get(ctx, client.ObjectKey{Name: name}, &node)
		switch {
		case apierrors.IsNotFound(err):
			lost[name] = true
		case err != nil:
			return nil, fmt.Errorf("get node %s: %w", name, err)
		default:
			lost[name] = !nodeReady(&node)
		}
	}
	return lost, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// memberName recovers our name for an etcd member: its own name once started, else the first DNS label
// of its peer URL (which we built from the name).
func memberName(m etcdclient.Member) string {
	if m.Name != "" {
		return m.Name
	}
	if len(m.PeerURLs) == 0 {
		return ""
	}
	u, err := url.Parse(m.PeerURLs[0])
	if err != nil {
		return ""
	}
	host, _, _ := strings.Cut(u.Hostname(), ".")
	return host
}

// podState maps a Pod to what the planner needs to know.
func podState(p *corev1.Pod, lostNodes map[string]bool) plan.PodState {
	switch {
	case p == nil:
		return plan.PodMissing
	case p.Spec.NodeName != "" && lostNodes[p.Spec.NodeName]:
		return plan.PodLost
	case p.DeletionTimestamp != nil:
		return plan.PodTerminating
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		return plan.PodFailed
	case p.Status.Phase == corev1.PodRunning:
		return plan.PodRunning
	}
	return plan.PodPending
}

// podVersion is the etcd version of a member Pod's image tag ("repo:v3.6.7" -> "3.6.7").
func podVersion(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, c := range p.Spec.Containers {
		if c.Name == "etcd" {
			i := strings.LastIndex(c.Image, ":")
			if i < 0 {
				return ""
			}
			return strings.TrimPrefix(c.Image[i+1:], "v")
		}
	}
	return ""
}

// initialMembers reads the bootstrap member set from any bootstrap Pod, so an interrupted bootstrap
// finishes with the set it began with.
func initialMembers(pods map[string]*corev1.Pod) []string {
	for _, p := range pods {
		if p.Annotations[etcdv1.AnnotationInitialState] != "new" {
			continue
		}
		var names []string
		for _, pair := range strings.Split(p.Annotations[etcdv1.AnnotationInitialCluster], ",") {
			if name, _, ok := strings.Cut(pair, "="); ok {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	return nil
}

// planView joins Kubernetes and etcd into the planner's input. When etcd is unreachable, the last
// status stands in for the member list so that known members can be brought back.
func (r *Reconciler) planView(cluster *etcdv1.EtcdCluster, o *observation, lost map[string]bool) plan.Cluster {
	c := plan.Cluster{
		Name:                 cluster.Name,
		Size:                 int(cluster.Spec.Size),
		Version:              cluster.Spec.Version,
		ConfigHash:           desired.ConfigHash(cluster),
		Persistent:           cluster.Spec.Storage.Kind == etcdv1.StoragePersistent,
		DeletePVCOnScaleDown: desired.DeletePVCOnScaleDown(cluster),
		Paused:               cluster.Spec.Paused,
		EtcdReachable:        o.listErr == nil,
		Bootstrapped:         o.listErr == nil || cluster.Status.ClusterID != "",
		InitialMembers:       initialMembers(o.pods),
	}
	byName := map[string]*plan.Member{}
	get := func(name string) *plan.Member {
		if m, ok := byName[name]; ok {
			return m
		}
		idx, ok := etcdv1.MemberIndex(cluster.Name, name)
		if !ok {
			idx = -1 // a member someone added by hand: it still counts toward quorum
		}
		byName[name] = &plan.Member{Name: name, Index: idx}
		return byName[name]
	}
	if c.EtcdReachable {
		leader := o.leaderID()
		for _, em := range o.members {
			m := get(memberName(em))
			m.InEtcd, m.ID, m.Learner, m.Started = true, em.ID, em.IsLearner, em.Name != ""
			check, checked := o.checks[em.ID]
			// A voter also needs its Pod Ready: only then is it behind the client Service, so a step
			// that waits for healthy members never leaves clients with fewer members than etcd has.
			// Learners are never Ready (their readiness probe is a linearizable read they refuse).
			m.Healthy = checked && check.healthy() && runsPodVersion(check, o.pods[m.Name]) &&
				(em.IsLearner || podReady(o.pods[m.Name]))
			m.Leader = m.Healthy && em.ID == leader
		}
	} else {
		for _, ms := range cluster.Status.Members {
			m := get(ms.Name)
			m.InEtcd, m.Learner, m.Started = true, ms.Role == etcdv1.RoleLearner, true
			m.ID = parseID(ms.ID)
		}
	}
	for name, p := range o.pods {
		m := get(name)
		m.Pod, m.PodVersion, m.PodConfigHash = podState(p, lost), podVersion(p), p.Annotations[etcdv1.AnnotationConfigHash]
	}
	for name, pvc := range o.pvcs {
		// A claim being deleted holds no usable data; its name still counts as used.
		get(name).HasPVC = pvc.DeletionTimestamp == nil
	}
	c.NextIndex = int(cluster.Status.NextMemberIndex)
	for _, m := range byName {
		c.Members = append(c.Members, *m)
		c.NextIndex = max(c.NextIndex, m.Index+1)
	}
	slices.SortFunc(c.Members, func(a, b plan.Member) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return strings.Compare(a.Name, b.Name)
	})
	return c
}

// runsPodVersion is false while a member's process still runs another version than its Pod's image:
// right after an in-place upgrade, before the container restarted. Such a member is not yet done.
// podReady reports the Pod's Ready condition. A member without a Pod (added by hand, or its Pod
// deleted) counts as ready: its health is etcd's alone, and a missing Pod is handled as such.
func podReady(p *corev1.Pod) bool {
	if p == nil {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func runsPodVersion(check memberCheck, pod *corev1.Pod) bool {
	want := podVersion(pod)
	return want == "" || check.status.Version == "" || check.status.Version == want
}

// leaderID is the leader most healthy members agree on (any one will do: they agree when healthy).
func (o *observation) leaderID() uint64 {
	for _, c := range o.checks {
		if c.healthy() && c.status.Leader != 0 {
			return c.status.Leader
		}
	}
	return 0
}

func parseID(hex string) uint64 {
	var id uint64
	if _, err := fmt.Sscanf(hex, "%x", &id); err != nil {
		return 0
	}
	return id
}
