package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/plan"
)

// writeStatus computes the status from the observation and the chosen step and patches it once, only
// when it changed. actErr is the error of the step, if it failed.
func (r *Reconciler) writeStatus(ctx context.Context, before, cluster *etcdv1.EtcdCluster, obs *observation, a plan.Action, actErr error) error {
	st := &cluster.Status
	st.ObservedGeneration = cluster.Generation
	st.Selector = labels.SelectorFromSet(etcdv1.SelectorLabels(cluster.Name)).String()
	st.ClientURL = r.Objects.DNS(cluster).ClientURL()
	st.NextMemberIndex = int32(obs.plan.NextIndex)
	if a.Kind == plan.AddLearner || a.Kind == plan.Bootstrap {
		st.NextMemberIndex = int32(nextIndexAfter(cluster.Name, obs.plan.NextIndex, a))
	}
	if obs.listErr == nil {
		st.Members = memberStatuses(obs)
		st.Replicas, st.ReadyMembers = int32(count(obs.plan, plan.Member.Voter)), int32(count(obs.plan, healthyVoter))
		st.CurrentVersion = lowestVersion(st.Members)
		st.LeaderID = ""
		if id := obs.leaderID(); id != 0 {
			st.LeaderID = hexID(id)
		}
		for _, c := range obs.checks {
			if c.healthy() && c.status.ClusterID != 0 {
				st.ClusterID = hexID(c.status.ClusterID)
				break
			}
		}
	} else {
		// Keep the last known roster (it is how members are found again) but mark nobody healthy.
		for i := range st.Members {
			st.Members[i].Healthy, st.Members[i].Leader = false, false
		}
		st.ReadyMembers, st.LeaderID = 0, ""
	}
	r.setConditions(cluster, obs, a, actErr)
	r.metrics.observe(cluster, obs)
	if equality.Semantic.DeepEqual(before.Status, cluster.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, cluster, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

func nextIndexAfter(cluster string, next int, a plan.Action) int {
	names := append([]string{a.Member}, a.Members...)
	for _, n := range names {
		if i, ok := etcdv1.MemberIndex(cluster, n); ok {
			next = max(next, i+1)
		}
	}
	return next
}

func healthyVoter(m plan.Member) bool { return m.Voter() && m.Healthy }

func count(c plan.Cluster, keep func(plan.Member) bool) int {
	n := 0
	for _, m := range c.Members {
		if keep(m) {
			n++
		}
	}
	return n
}

func memberStatuses(obs *observation) []etcdv1.MemberStatus {
	leader := obs.leaderID()
	out := make([]etcdv1.MemberStatus, 0, len(obs.members))
	for _, m := range obs.members {
		check, checked := obs.checks[m.ID] // unchecked: never started, or no process to ask
		ms := etcdv1.MemberStatus{
			Name:    memberName(m),
			ID:      hexID(m.ID),
			Role:    etcdv1.RoleVoter,
			Leader:  m.ID == leader,
			Healthy: checked && check.healthy(),
			Version: check.status.Version,
			Alarms:  check.status.Errors,
		}
		if check.statusErr == nil {
			ms.DBSizeBytes = check.status.DBSize
		}
		if m.IsLearner {
			ms.Role = etcdv1.RoleLearner
		}
		if len(m.PeerURLs) > 0 {
			ms.PeerURL = m.PeerURLs[0]
		}
		if len(m.ClientURLs) > 0 {
			ms.ClientURL = m.ClientURLs[0]
		}
		out = append(out, ms)
	}
	slices.SortFunc(out, func(a, b etcdv1.MemberStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// lowestVersion is the version the cluster as a whole speaks: that of its oldest member.
func lowestVersion(ms []etcdv1.MemberStatus) string {
	lowest := ""
	for _, m := range ms {
		if m.Version != "" && (lowest == "" || versionLess(m.Version, lowest)) {
			lowest = m.Version
		}
	}
	return lowest
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// setConditions sets Available, Progressing and Degraded from what was seen and the step taken.
func (r *Reconciler) setConditions(cluster *etcdv1.EtcdCluster, obs *observation, a plan.Action, actErr error) {
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: cluster.Generation})
	}
	// Read before Available is rewritten: was the cluster ever available?
	forming := stillForming(cluster)
	status, reason, msg := available(cluster, obs, forming)
	set(etcdv1.ConditionAvailable, status, reason, msg)

	progressing := metav1.ConditionTrue
	if a.Kind == plan.None {
		progressing = metav1.ConditionFalse
	}
	set(etcdv1.ConditionProgressing, progressing, a.Reason, a.Message)

	prev := meta.FindStatusCondition(cluster.Status.Conditions, etcdv1.ConditionDegraded)
	status, reason, msg = degraded(obs, a, actErr, forming)
	if reason == etcdv1.ReasonChangeRefused && (prev == nil || prev.Reason != reason || prev.Message != msg) {
		// One event per new refusal, not one per reconcile while it stands.
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventChangeRefused, string(a.Kind), "%s", msg)
	}
	set(etcdv1.ConditionDegraded, status, reason, msg)
}

// stillForming reports whether the cluster has never been Available: between the initial members
// forming a cluster and a quorum of them turning healthy and Ready, that is creation, not a lost quorum.
func stillForming(cluster *etcdv1.EtcdCluster) bool {
	c := meta.FindStatusCondition(cluster.Status.Conditions, etcdv1.ConditionAvailable)
	return c == nil || c.Reason == etcdv1.ReasonBootstrapping
}

func available(cluster *etcdv1.EtcdCluster, obs *observation, forming bool) (metav1.ConditionStatus, string, string) {
	v, h := count(obs.plan, plan.Member.Voter), count(obs.plan, healthyVoter)
	switch {
	case !obs.plan.Bootstrapped:
		return metav1.ConditionFalse, etcdv1.ReasonBootstrapping, "the initial members have not formed a cluster yet"
	case forming && obs.listErr == nil && h < plan.Quorum(v):
		return metav1.ConditionFalse, etcdv1.ReasonBootstrapping,
			fmt.Sprintf("the initial members formed a cluster; %d of %d are healthy and Ready, %d needed", h, v, plan.Quorum(v))
	case obs.listErr != nil && obs.answering > 0:
		return metav1.ConditionFalse, etcdv1.ReasonQuorumLost,
			fmt.Sprintf("%d of %d known members answer but the member list fails (%v); no membership change is made until quorum returns",
				obs.answering, len(cluster.Status.Members), obs.listErr)
	case obs.listErr != nil:
		return metav1.ConditionFalse, etcdv1.ReasonEtcdUnreachable, "no member answered the member list: " + obs.listErr.Error()
	case h < plan.Quorum(v):
		return metav1.ConditionFalse, etcdv1.ReasonQuorumLost,
			fmt.Sprintf("%d of %d voters are healthy, %d needed; no membership change is made until quorum returns", h, v, plan.Quorum(v))
	}
	return metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy, fmt.Sprintf("%d of %d voters are healthy", h, v)
}

const quorumLostHelp = "quorum is lost; members recover as their Pods come back; if a majority lost its data, restore from a backup"

func degraded(obs *observation, a plan.Action, actErr error, forming bool) (metav1.ConditionStatus, string, string) {
	v, h := count(obs.plan, plan.Member.Voter), count(obs.plan, healthyVoter)
	bootstrapped := obs.plan.Bootstrapped
	switch {
	case (!bootstrapped || forming && obs.listErr == nil && h < plan.Quorum(v)) && actErr == nil:
		return metav1.ConditionFalse, etcdv1.ReasonBootstrapping, "the cluster is being created"
	case actErr != nil:
		return metav1.ConditionTrue, etcdv1.ReasonActionFailed, fmt.Sprintf("%s %s failed: %v", a.Kind, a.Member, actErr)
	case bootstrapped && obs.listErr != nil && obs.answering > 0:
		return metav1.ConditionTrue, etcdv1.ReasonQuorumLost, quorumLostHelp
	case bootstrapped && obs.listErr != nil:
		return metav1.ConditionTrue, etcdv1.ReasonEtcdUnreachable, "no member answered the member list"
	case bootstrapped && h < plan.Quorum(v):
		return metav1.ConditionTrue, etcdv1.ReasonQuorumLost, quorumLostHelp
	case a.Refused:
		return metav1.ConditionTrue, etcdv1.ReasonChangeRefused, a.Message
	case alarms(obs) != "":
		return metav1.ConditionTrue, etcdv1.ReasonAlarmActive, alarms(obs)
	case bootstrapped && unhealthy(obs.plan) != "":
		return metav1.ConditionTrue, etcdv1.ReasonMembersUnhealthy, "unhealthy: " + unhealthy(obs.plan)
	}
	return metav1.ConditionFalse, etcdv1.ReasonHealthy, "every member is healthy"
}

func alarms(obs *observation) string {
	var out []string
	for _, m := range obs.members {
		for _, e := range obs.checks[m.ID].status.Errors {
			out = append(out, memberName(m)+": "+e)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func unhealthy(c plan.Cluster) string {
	var out []string
	for _, m := range c.Members {
		if m.InEtcd && (!m.Healthy || m.Pod != plan.PodRunning) {
			out = append(out, fmt.Sprintf("%s (Pod %s)", m.Name, m.Pod))
		}
	}
	return strings.Join(out, ", ")
}
