package plan

import (
	"fmt"
	"slices"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// CheckInvariants reports the first safety rule an action would break on the observed cluster. The
// fuzz target runs it on every plan, and the controller runs it before acting, as a last line of defence.
//   - a paused cluster gets no action;
//   - never two learners: a learner is added only when none exists, and only while every voter is healthy;
//   - a voter is removed only while quorum holds now and afterwards, and the last healthy voter never;
//   - a running member is restarted (upgraded or recreated) only while the others keep quorum, except in
//     one- and two-member clusters, which cannot tolerate any restart;
//   - a new member never reuses a name.
func CheckInvariants(c Cluster, a Action) error {
	if c.Paused && a.Kind != None {
		return fmt.Errorf("paused cluster got %s", a)
	}
	m, found := c.member(a.Member)
	switch a.Kind {
	case AddLearner:
		return checkAdd(c, a, found)
	case Promote:
		if !found || !m.Learner || !m.Started {
			return fmt.Errorf("promote of a member that is not a started learner: %s", a)
		}
	case RemoveMember:
		return checkRemove(c, a, m, found)
	case MoveLeader:
		target := slices.IndexFunc(c.Members, func(x Member) bool { return x.ID == a.TargetID && x.Voter() && x.Healthy })
		if target < 0 {
			return fmt.Errorf("leadership moved to a member that is not a healthy voter: %s", a)
		}
	case Upgrade, DeletePod:
		if found && m.Voter() && m.Healthy && m.Pod == PodRunning && c.voters() >= 3 && c.healthyVoters()-1 < Quorum(c.voters()) {
			return fmt.Errorf("restart of %s would lose quorum: %s", a.Member, a)
		}
	}
	return nil
}

func checkAdd(c Cluster, a Action, exists bool) error {
	if _, ok := c.learner(); ok {
		return fmt.Errorf("second learner added: %s", a)
	}
	if !c.allVotersHealthy() {
		return fmt.Errorf("learner added while a voter is unhealthy: %s", a)
	}
	if exists {
		return fmt.Errorf("new member reuses the name %s", a.Member)
	}
	if n, ok := etcdv1.MemberIndex(c.Name, a.Member); !ok || n < c.NextIndex {
		return fmt.Errorf("new member %s has an index below the next unused %d", a.Member, c.NextIndex)
	}
	return nil
}

func checkRemove(c Cluster, a Action, m Member, found bool) error {
	if !found || !m.InEtcd {
		return fmt.Errorf("remove of a member not in etcd: %s", a)
	}
	if ok, why := safeToRemove(c, m); !ok {
		return fmt.Errorf("remove would %s: %s", why, a)
	}
	if m.Voter() && m.Healthy && c.healthyVoters() == 1 {
		return fmt.Errorf("remove of the last healthy voter: %s", a)
	}
	if m.Leader {
		return fmt.Errorf("remove of the leader without moving leadership first: %s", a)
	}
	return nil
}
