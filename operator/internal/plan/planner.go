package plan

import (
	"fmt"
	"slices"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// Next returns the single next step for the cluster. The order of the checks is the policy:
//  1. paused clusters are left alone;
//  2. a cluster that has not formed yet finishes its bootstrap;
//  3. Pods and PVCs of removed members are cleaned up;
//  4. failed members are recreated (data intact) or removed (data lost), never below quorum;
//  5. a learner in flight is started and promoted (or removed when no longer wanted);
//  6. size changes: remove extra members (unhealthy, learner, outdated, newest; leader moved first),
//     or add one learner when every voter is healthy;
//  7. rolling changes, one member at a time, leader last, only while every member is healthy:
//     version upgrades in place, then Pod settings.
func Next(c Cluster) Action {
	if c.Paused {
		return idle(etcdv1.ReasonPaused, "spec.paused is true: no changes are made")
	}
	if !c.Bootstrapped {
		return bootstrap(c)
	}
	if !c.EtcdReachable {
		return unreachable(c)
	}
	steps := []func(Cluster) (Action, bool){cleanup, repair, learner, resize, roll, settle}
	for _, step := range steps {
		if a, ok := step(c); ok {
			return a
		}
	}
	return idle(etcdv1.ReasonReconciled, fmt.Sprintf("%d healthy members at version %s", c.Size, c.Version))
}

// bootstrap creates every initial member's Pod at once. The initial set is taken from Pods already
// created (a crash may have interrupted the bootstrap), so it never changes under a forming cluster.
func bootstrap(c Cluster) Action {
	names := c.InitialMembers
	if len(names) == 0 {
		for i := range c.Size {
			names = append(names, memberName(c, i))
		}
	}
	var missing []string
	for _, n := range names {
		m, ok := c.member(n)
		switch {
		case !ok || m.Pod == PodMissing:
			missing = append(missing, n)
		case m.Pod == PodFailed:
			return Action{Kind: DeletePod, Member: n, Reason: etcdv1.ReasonCreating,
				Message: "bootstrap Pod failed and will be recreated"}
		}
	}
	if len(missing) > 0 {
		return Action{Kind: Bootstrap, Members: missing, InitialCluster: names, Reason: etcdv1.ReasonCreating,
			Message: fmt.Sprintf("creating %d initial members of a %d-member cluster", len(missing), len(names))}
	}
	return wait(etcdv1.ReasonCreating, fmt.Sprintf("waiting for %d initial members to form a cluster", len(names)))
}

// unreachable handles a formed cluster that answers no member list. With Persistent storage, Pods of
// known members that are gone are recreated on their data: that is how a cluster whose Pods were all
// deleted (or whose nodes all rebooted) comes back. Nothing else is safe without etcd's word.
func unreachable(c Cluster) Action {
	if c.Persistent {
		for _, m := range c.Members {
			if m.InEtcd && m.HasPVC && m.Pod == PodMissing {
				return Action{Kind: CreatePod, Member: m.Name, MemberID: m.ID, Reason: etcdv1.ReasonReplacingMember,
					Message: "etcd is unreachable; recreating the Pod of a known member on its data"}
			}
			if m.InEtcd && m.HasPVC && (m.Pod == PodFailed || m.Pod == PodLost) {
				return deletePod(m, etcdv1.ReasonReplacingMember, "etcd is unreachable; the Pod can never run again")
			}
		}
	}
	return wait(etcdv1.ReasonWaiting, "etcd answers no member list; waiting for members to come back")
}

// cleanup deletes what removed members left behind: their Pods, then their PVCs when policy says so.
func cleanup(c Cluster) (Action, bool) {
	for _, m := range c.Members {
		if m.InEtcd {
			continue
		}
		if m.Pod != PodMissing && m.Pod != PodTerminating {
			return Action{Kind: DeletePod, Member: m.Name, Reason: etcdv1.ReasonScalingDown,
				Message: "member is not in etcd's member list; deleting its Pod"}, true
		}
		if m.Pod == PodMissing && m.HasPVC && c.DeletePVCOnScaleDown {
			return Action{Kind: DeletePVC, Member: m.Name, Reason: etcdv1.ReasonScalingDown,
				Message: "deleting the PVC of a removed member (retentionPolicy.whenScaled: Delete)"}, true
		}
	}
	return Action{}, false
}

// repair brings back members whose Pod is gone or can never run again.
func repair(c Cluster) (Action, bool) {
	for _, m := range c.Members {
		if !m.InEtcd {
			continue
		}
		switch m.Pod {
		case PodFailed:
			return deletePod(m, etcdv1.ReasonReplacingMember, "Pod is in a terminal phase and will never run again"), true
		case PodLost:
			if m.Healthy {
				continue // the node looks lost but etcd still hears the member: trust etcd
			}
			return deletePod(m, etcdv1.ReasonReplacingMember, "Pod's node is not ready or gone"), true
		case PodMissing:
			if a, ok := replaceMissing(c, m); ok {
				return a, true
			}
		}
	}
	return Action{}, false
}

// replaceMissing decides for a member in etcd without a Pod.
func replaceMissing(c Cluster, m Member) (Action, bool) {
	switch {
	case !m.Started:
		// Added but never ran: its Pod was not created yet (or a crash came between). Create it now.
		return Action{Kind: CreatePod, Member: m.Name, MemberID: m.ID, Reason: etcdv1.ReasonScalingUp,
			Message: "starting the Pod of a member that has not run yet"}, true
	case m.Healthy:
		// etcd still hears this member: the Pod list is behind. Never act on a stale view.
		return Action{}, false
	case c.Persistent && m.HasPVC:
		return Action{Kind: CreatePod, Member: m.Name, MemberID: m.ID, Reason: etcdv1.ReasonReplacingMember,
			Message: "recreating the Pod of a failed member on its intact data"}, true
	}
	// The data is gone with the Pod: the member cannot come back and must be replaced by a fresh one.
	if ok, why := safeToRemove(c, m); !ok {
		return refuse(etcdv1.ReasonReplacingMember, fmt.Sprintf("member %s lost its data but removing it now would %s", m.Name, why)), true
	}
	return Action{Kind: RemoveMember, Member: m.Name, MemberID: m.ID, Reason: etcdv1.ReasonReplacingMember,
		Message: "member lost its data with its Pod; removing it so a fresh member can replace it"}, true
}

// learner moves the (at most one) learner toward being a voter, or removes it when it is not wanted.
func learner(c Cluster) (Action, bool) {
	l, ok := c.learner()
	if !ok {
		return Action{}, false
	}
	wanted := c.voters() < c.Size || (c.voters() == c.Size && c.outdatedConfig() != nil)
	if !wanted {
		return Action{Kind: RemoveMember, Member: l.Name, MemberID: l.ID, Reason: etcdv1.ReasonScalingDown,
			Message: "learner is no longer needed after the size was lowered"}, true
	}
	if l.Pod != PodRunning || !l.Started {
		return Action{Kind: Wait, Reason: etcdv1.ReasonScalingUp, RequeueAfter: PollProgress,
			Message: fmt.Sprintf("waiting for learner %s to start (Pod %s)", l.Name, l.Pod)}, true
	}
	if !c.allVotersHealthy() {
		return wait(etcdv1.ReasonWaiting, fmt.Sprintf("learner %s waits for every voter to be healthy before promotion", l.Name)), true
	}
	return Action{Kind: Promote, Member: l.Name, MemberID: l.ID, Reason: reasonForGrowth(c),
		Message: "promoting learner to voter", RequeueAfter: PollLearner}, true
}

// resize removes one extra voter or adds one learner.
func resize(c Cluster) (Action, bool) {
	v := c.voters()
	if v > c.Size {
		return scaleDown(c), true
	}
	if v < c.Size {
		if !c.allVotersHealthy() {
			return refuse(etcdv1.ReasonWaiting, fmt.Sprintf("%d of %d voters are healthy; a member is added only when all are", c.healthyVoters(), v)), true
		}
		return addLearner(c, reasonForGrowth(c), fmt.Sprintf("adding a member as a learner (%d of %d voters)", v, c.Size)), true
	}
	return Action{}, false
}

func scaleDown(c Cluster) Action {
	victim := c.removalCandidate()
	if victim.Leader {
		if target, ok := c.leaderTarget(victim.Name); ok {
			return Action{Kind: MoveLeader, Member: victim.Name, MemberID: victim.ID, TargetID: target.ID,
				Reason: etcdv1.ReasonScalingDown, Message: fmt.Sprintf("moving leadership to %s before removing %s", target.Name, victim.Name)}
		}
		return refuse(etcdv1.ReasonWaiting, fmt.Sprintf("member %s leads and no healthy voter can take over", victim.Name))
	}
	if ok, why := safeToRemove(c, victim); !ok {
		return refuse(etcdv1.ReasonScalingDown, fmt.Sprintf("removing member %s now would %s", victim.Name, why))
	}
	reason := etcdv1.ReasonScalingDown
	if c.voters() == c.Size+1 && victim.PodConfigHash != c.ConfigHash && c.outdatedConfig() != nil {
		reason = etcdv1.ReasonRollingUpdate
	}
	return Action{Kind: RemoveMember, Member: victim.Name, MemberID: victim.ID, Reason: reason,
		Message: fmt.Sprintf("removing member %s (%d voters, %d wanted)", victim.Name, c.voters(), c.Size)}
}

// roll applies version and Pod-setting changes one member at a time, leader last.
func roll(c Cluster) (Action, bool) {
	outdated := c.outdatedVersion()
	reason, kind := etcdv1.ReasonUpgrading, Upgrade
	if outdated == nil {
		outdated, reason = c.outdatedConfig(), etcdv1.ReasonRollingUpdate
		kind = DeletePod
	}
	if outdated == nil {
		return Action{}, false
	}
	if !c.allMembersHealthy() {
		return wait(etcdv1.ReasonWaiting, fmt.Sprintf("%s waits until every member is healthy", reason)), true
	}
	m := pickLeaderLast(outdated)
	if m.Leader && c.voters() > 1 {
		if target, ok := c.leaderTarget(m.Name); ok {
			return Action{Kind: MoveLeader, Member: m.Name, MemberID: m.ID, TargetID: target.ID, Reason: reason,
				Message: fmt.Sprintf("moving leadership to %s before rolling %s", target.Name, m.Name)}, true
		}
	}
	if kind == DeletePod && !c.Persistent {
		// Without a PVC a new Pod is a new member: add one first (a surge), then remove the outdated one.
		return addLearner(c, reason, fmt.Sprintf("adding an up-to-date member to replace %s", m.Name)), true
	}
	if kind == Upgrade {
		return Action{Kind: Upgrade, Member: m.Name, MemberID: m.ID, Reason: reason,
			Message: fmt.Sprintf("upgrading %s from %s to %s", m.Name, m.PodVersion, c.Version)}, true
	}
	return deletePod(m, reason, "recreating the Pod with the new settings on the same data"), true
}

// settle holds off "reconciled" while a member's Pod is not running, e.g. while the Pod cache catches up
// with a Pod that etcd already hears from.
func settle(c Cluster) (Action, bool) {
	for _, m := range c.Members {
		if m.InEtcd && m.Pod != PodRunning {
			return wait(etcdv1.ReasonWaiting, fmt.Sprintf("waiting for the Pod of %s (%s)", m.Name, m.Pod)), true
		}
	}
	return Action{}, false
}

func addLearner(c Cluster, reason, msg string) Action {
	return Action{Kind: AddLearner, Member: memberName(c, c.NextIndex), Reason: reason, Message: msg}
}

func deletePod(m Member, reason, msg string) Action {
	return Action{Kind: DeletePod, Member: m.Name, MemberID: m.ID, Force: m.Pod == PodLost, Reason: reason, Message: msg}
}

func reasonForGrowth(c Cluster) string {
	if c.voters() >= c.Size {
		return etcdv1.ReasonRollingUpdate
	}
	for _, m := range c.Members {
		if m.Started && !m.InEtcd {
			return etcdv1.ReasonReplacingMember
		}
	}
	return etcdv1.ReasonScalingUp
}

// pickLeaderLast returns the first non-leader, or the leader when it is the only one.
func pickLeaderLast(ms []Member) Member {
	i := slices.IndexFunc(ms, func(m Member) bool { return !m.Leader })
	if i < 0 {
		return ms[0]
	}
	return ms[i]
}

// memberName names member i of the cluster.
func memberName(c Cluster, i int) string { return etcdv1.MemberName(c.Name, i) }
