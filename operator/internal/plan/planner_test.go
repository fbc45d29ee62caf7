package plan

import (
	"strings"
	"testing"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

func TestNext(t *testing.T) {
	tests := []struct {
		name     string
		in       Cluster
		kind     Kind
		member   string   // expected Action.Member, when set
		members  []string // expected Action.Members (Bootstrap)
		target   uint64   // expected TargetID (MoveLeader)
		reason   string
		refused  bool
		contains string // substring of the message
	}{
		// Bootstrap.
		{name: "new cluster creates all members at once", in: cluster(3, notBootstrapped(), noMembers()),
			kind: Bootstrap, members: []string{"e-0", "e-1", "e-2"}, reason: etcdv1.ReasonCreating},
		{name: "interrupted bootstrap creates only the missing Pods of the recorded initial cluster",
			in: cluster(5, notBootstrapped(), func(c *Cluster) {
				c.InitialMembers = []string{"e-0", "e-1", "e-2"}
				c.Members = c.Members[:1]
			}),
			kind: Bootstrap, members: []string{"e-1", "e-2"}},
		{name: "bootstrap waits while Pods start", in: cluster(3, notBootstrapped()), kind: Wait, reason: etcdv1.ReasonCreating},
		{name: "failed bootstrap Pod is deleted for recreation", in: cluster(3, notBootstrapped(), podState(1, PodFailed)),
			kind: DeletePod, member: "e-1"},

		// Steady state and pause.
		{name: "healthy cluster at spec does nothing", in: cluster(3), kind: None, reason: etcdv1.ReasonReconciled},
		{name: "paused cluster does nothing even when a member is gone", in: cluster(3, paused(), podState(1, PodMissing), down(1)),
			kind: None, reason: etcdv1.ReasonPaused},

		// Scale up through learners.
		{name: "scale up adds a learner with a fresh index", in: cluster(3, size(5), func(c *Cluster) { c.NextIndex = 7 }),
			kind: AddLearner, member: "e-7", reason: etcdv1.ReasonScalingUp},
		{name: "scale up waits for an unhealthy voter", in: cluster(3, size(5), down(2)), kind: Wait, refused: true},
		{name: "learner without a Pod gets one", in: cluster(3, size(4), withLearner(false, PodMissing)),
			kind: CreatePod, member: "e-3"},
		{name: "learner Pod starting: wait", in: cluster(3, size(4), withLearner(false, PodPending)), kind: Wait, member: ""},
		{name: "started learner is promoted", in: cluster(3, size(4), withLearner(true, PodRunning)),
			kind: Promote, member: "e-3"},
		{name: "learner no longer wanted is removed", in: cluster(3, size(3), withLearner(true, PodRunning)),
			kind: RemoveMember, member: "e-3", reason: etcdv1.ReasonScalingDown},
		{name: "learner waits for voters before promotion", in: cluster(3, size(4), down(1), withLearner(true, PodRunning)),
			kind: Wait},

		// Scale down.
		{name: "scale down removes the newest non-leader", in: cluster(5, size(3)), kind: RemoveMember, member: "e-4"},
		{name: "scale down removes an unhealthy member first", in: cluster(5, size(3), down(1)), kind: RemoveMember, member: "e-1"},
		{name: "scale down moves leadership off a leader victim",
			in:   cluster(3, size(1), leader(2), func(c *Cluster) { c.Members[0].Healthy = true }, edit(2, func(m *Member) { m.PodConfigHash = "old" })),
			kind: MoveLeader, member: "e-2", target: 0x100},
		{name: "scale down never skips the leader rule", in: cluster(2, size(1), leader(1)), kind: RemoveMember, member: "e-0"},
		{name: "scale down refused without quorum", in: cluster(3, size(2), down(0), down(1)), kind: Wait, refused: true,
			contains: "quorum"},
		{name: "PVC of a removed member is deleted per policy", in: cluster(4, size(3), persistent(), removed(3), podState(3, PodMissing),
			func(c *Cluster) { c.DeletePVCOnScaleDown = true }), kind: DeletePVC, member: "e-3"},
		{name: "PVC of a removed member is kept per policy", in: cluster(4, size(3), persistent(), removed(3), podState(3, PodMissing)),
			kind: None},
		{name: "orphan Pod of a removed member is deleted", in: cluster(4, size(3), removed(3)), kind: DeletePod, member: "e-3"},

		// Failed members.
		{name: "ephemeral member whose Pod is gone is removed", in: cluster(3, podState(2, PodMissing), down(2)),
			kind: RemoveMember, member: "e-2", reason: etcdv1.ReasonReplacingMember},
		{name: "ephemeral member gone then replaced by a learner", in: cluster(3, removed(2), podState(2, PodMissing)),
			kind: AddLearner, member: "e-3"},
		{name: "persistent member whose Pod is gone comes back on its data", in: cluster(3, persistent(), podState(1, PodMissing), down(1)),
			kind: CreatePod, member: "e-1", reason: etcdv1.ReasonReplacingMember},
		{name: "persistent member whose PVC is gone is removed", in: cluster(3, persistent(), podState(1, PodMissing), down(1),
			edit(1, func(m *Member) { m.HasPVC = false })), kind: RemoveMember, member: "e-1"},
		{name: "failed Pod is deleted", in: cluster(3, podState(1, PodFailed), down(1)), kind: DeletePod, member: "e-1"},
		{name: "Pod on a lost node is force-deleted", in: cluster(3, podState(1, PodLost), down(1)), kind: DeletePod, member: "e-1"},
		{name: "Pod on a lost node but member still healthy: trust etcd", in: cluster(3, podState(1, PodLost)), kind: Wait},
		{name: "missing Pod of a healthy member is a stale cache: no removal", in: cluster(3, podState(1, PodMissing)), kind: Wait},
		{name: "member lost data but removal would lose quorum", in: cluster(3, podState(1, PodMissing), down(1), down(2)),
			kind: Wait, refused: true},
		{name: "unreachable persistent cluster recreates known Pods",
			in:   cluster(3, persistent(), unreachableEtcd(), podState(0, PodMissing), podState(1, PodMissing), podState(2, PodMissing)),
			kind: CreatePod, member: "e-0"},
		{name: "unreachable ephemeral cluster waits", in: cluster(3, unreachableEtcd(), podState(0, PodMissing)), kind: Wait},

		// Rolling changes.
		{name: "upgrade starts with a non-leader", in: cluster(3, version("3.6.8")), kind: Upgrade, member: "e-1", reason: etcdv1.ReasonUpgrading},
		{name: "upgrade moves leadership before the leader",
			in:   cluster(3, version("3.6.8"), edit(1, func(m *Member) { m.PodVersion = "3.6.8" }), edit(2, func(m *Member) { m.PodVersion = "3.6.8" })),
			kind: MoveLeader, member: "e-0", target: 0x101},
		{name: "upgrade waits for every member healthy", in: cluster(3, version("3.6.8"), down(2)), kind: Wait},
		{name: "single member upgrades in place", in: cluster(1, version("3.6.8")), kind: Upgrade, member: "e-0"},
		{name: "persistent config change recreates a non-leader Pod", in: cluster(3, persistent(), config("h2")),
			kind: DeletePod, member: "e-1", reason: etcdv1.ReasonRollingUpdate},
		{name: "ephemeral config change surges with a learner", in: cluster(3, config("h2")),
			kind: AddLearner, member: "e-3", reason: etcdv1.ReasonRollingUpdate},
		{name: "surge learner is promoted", in: cluster(3, config("h2"), withLearner(true, PodRunning), edit(3, func(m *Member) { m.PodConfigHash = "h2" })),
			kind: Promote, member: "e-3"},
		{name: "after the surge an outdated non-leader leaves", in: cluster(4, size(3), config("h2"), edit(3, func(m *Member) { m.PodConfigHash = "h2" })),
			kind: RemoveMember, member: "e-1", reason: etcdv1.ReasonRollingUpdate},
		{name: "version before settings", in: cluster(3, version("3.6.8"), config("h2")), kind: Upgrade},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Next(tt.in)
			if a.Kind != tt.kind {
				t.Fatalf("kind = %s, want %s (action: %s)", a.Kind, tt.kind, a)
			}
			if tt.member != "" && a.Member != tt.member {
				t.Errorf("member = %q, want %q (action: %s)", a.Member, tt.member, a)
			}
			if tt.members != nil && strings.Join(a.Members, ",") != strings.Join(tt.members, ",") {
				t.Errorf("members = %v, want %v", a.Members, tt.members)
			}
			if tt.target != 0 && a.TargetID != tt.target {
				t.Errorf("target = %x, want %x", a.TargetID, tt.target)
			}
			if tt.reason != "" && a.Reason != tt.reason {
				t.Errorf("reason = %s, want %s", a.Reason, tt.reason)
			}
			if a.Refused != tt.refused {
				t.Errorf("refused = %v, want %v (%s)", a.Refused, tt.refused, a)
			}
			if !strings.Contains(a.Message, tt.contains) {
				t.Errorf("message %q does not contain %q", a.Message, tt.contains)
			}
			if a.Message == "" || a.Reason == "" {
				t.Errorf("every action needs a reason and a message: %+v", a)
			}
			if err := CheckInvariants(tt.in, a); err != nil {
				t.Errorf("invariant broken: %v", err)
			}
		})
	}
}

// TestScaleSequenceConverges drives the planner through a simulated cluster from nothing to 3, 5 and
// back to 3, applying each action to the simulation, and checks it arrives without breaking invariants.
func TestScaleSequenceConverges(t *testing.T) {
	sim := newSim(t, 3)
	sim.runUntilIdle()
	for _, size := range []int{5, 3, 1, 3} {
		sim.c.Size = size
		sim.runUntilIdle()
		if got := sim.c.voters(); got != size {
			t.Fatalf("after scaling to %d: %d voters", size, got)
		}
	}
	sim.c.Version = "3.6.8"
	sim.runUntilIdle()
	if out := sim.c.outdatedVersion(); len(out) != 0 {
		t.Fatalf("members still outdated after upgrade: %v", out)
	}
	sim.c.ConfigHash = "h2"
	sim.runUntilIdle()
	if out := sim.c.outdatedConfig(); len(out) != 0 || sim.c.voters() != 3 {
		t.Fatalf("after settings roll: outdated %v, %d voters", out, sim.c.voters())
	}
	if len(sim.names) != len(uniq(sim.names)) {
		t.Fatalf("a member name was reused: %v", sim.names)
	}
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}
