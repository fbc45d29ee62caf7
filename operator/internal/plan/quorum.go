package plan

import (
	"fmt"
	"slices"
)

// Quorum is the number of voters that must agree for etcd to commit anything.
func Quorum(voters int) int { return voters/2 + 1 }

// safeToRemove is the one place that decides whether a member can leave without losing quorum. A
// learner never counts toward quorum. For a voter, the cluster must have quorum now (or etcd cannot
// commit the change) and still have it afterwards, counting only healthy voters; the last voter never
// leaves.
func safeToRemove(c Cluster, m Member) (bool, string) {
	if m.Learner {
		return true, ""
	}
	v, h := c.voters(), c.healthyVoters()
	if v <= 1 {
		return false, "remove the last voter"
	}
	if h < Quorum(v) {
		return false, fmt.Sprintf("need a quorum that is not there (%d of %d voters healthy, %d needed)", h, v, Quorum(v))
	}
	after := h
	if m.Healthy {
		after--
	}
	if after < Quorum(v-1) {
		return false, fmt.Sprintf("leave %d healthy of %d voters, below the quorum of %d", after, v-1, Quorum(v-1))
	}
	return true, ""
}

func (c Cluster) member(name string) (Member, bool) {
	i := slices.IndexFunc(c.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return c.Members[i], true
}

func (c Cluster) voters() int {
	n := 0
	for _, m := range c.Members {
		if m.Voter() {
			n++
		}
	}
	return n
}

func (c Cluster) healthyVoters() int {
	n := 0
	for _, m := range c.Members {
		if m.Voter() && m.Healthy {
			n++
		}
	}
	return n
}

func (c Cluster) allVotersHealthy() bool { return c.healthyVoters() == c.voters() }

// allMembersHealthy is the precondition of rolling changes: every member in etcd is healthy and runs.
func (c Cluster) allMembersHealthy() bool {
	for _, m := range c.Members {
		if m.InEtcd && (!m.Healthy || m.Pod != PodRunning) {
			return false
		}
	}
	return true
}

func (c Cluster) learner() (Member, bool) {
	for _, m := range c.Members {
		if m.InEtcd && m.Learner {
			return m, true
		}
	}
	return Member{}, false
}

// outdatedVersion lists voters whose Pod runs another etcd version than the spec.
func (c Cluster) outdatedVersion() []Member {
	return c.votersWhere(func(m Member) bool { return m.Pod != PodMissing && m.PodVersion != c.Version })
}

// outdatedConfig lists voters whose Pod was built from other settings than the spec.
func (c Cluster) outdatedConfig() []Member {
	return c.votersWhere(func(m Member) bool { return m.Pod != PodMissing && m.PodConfigHash != c.ConfigHash })
}

func (c Cluster) votersWhere(keep func(Member) bool) []Member {
	var out []Member
	for _, m := range c.Members {
		if m.Voter() && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// removalCandidate picks the voter to remove on scale-down: an unhealthy one first (it serves nobody),
// then one with outdated settings (a surge finishing, or simply the one to roll anyway), then the newest
// non-leader (the oldest members have the longest track record). Leaders come last.
func (c Cluster) removalCandidate() Member {
	if bad := c.votersWhere(func(m Member) bool { return !m.Healthy }); len(bad) > 0 {
		return bad[len(bad)-1]
	}
	if old := c.outdatedConfig(); len(old) > 0 {
		return pickLeaderLast(old)
	}
	voters := c.votersWhere(func(Member) bool { return true })
	for i := len(voters) - 1; i >= 0; i-- {
		if !voters[i].Leader {
			return voters[i]
		}
	}
	return voters[len(voters)-1]
}

// leaderTarget picks the healthy voter to hand leadership to, preferring one already up to date.
func (c Cluster) leaderTarget(exclude string) (Member, bool) {
	candidates := c.votersWhere(func(m Member) bool { return m.Healthy && m.Name != exclude && m.Pod == PodRunning })
	if len(candidates) == 0 {
		return Member{}, false
	}
	for _, m := range candidates {
		if m.PodVersion == c.Version && m.PodConfigHash == c.ConfigHash {
			return m, true
		}
	}
	return candidates[0], true
}
