package plan

import (
	"testing"
)

// sim is a toy cluster that applies planner actions the way the controller and etcd would, with every
// Pod starting at once. It checks the invariants at each step and fails on a loop.
type sim struct {
	t     *testing.T
	c     Cluster
	names []string // every member name ever created, to catch reuse
}

func newSim(t *testing.T, size int) *sim {
	return &sim{t: t, c: Cluster{Name: "e", Size: size, Version: v6, ConfigHash: hash, Persistent: false}}
}

func (s *sim) runUntilIdle() {
	s.t.Helper()
	for step := 0; step < 100; step++ {
		a := Next(s.c)
		if err := CheckInvariants(s.c, a); err != nil {
			s.t.Fatalf("step %d: %v", step, err)
		}
		if a.Kind == None {
			return
		}
		s.apply(a)
	}
	s.t.Fatalf("no convergence after 100 steps: %+v", s.c)
}

func (s *sim) apply(a Action) {
	c := &s.c
	idx := func(name string) int {
		for i, m := range c.Members {
			if m.Name == name {
				return i
			}
		}
		s.t.Fatalf("no member %s for %s", name, a)
		return -1
	}
	switch a.Kind {
	case Bootstrap:
		for _, n := range a.Members {
			s.add(Member{Name: n, InEtcd: true, Started: true, Healthy: true, Pod: PodRunning, PodVersion: c.Version, PodConfigHash: c.ConfigHash})
		}
		c.Members[0].Leader = true
		c.Bootstrapped, c.EtcdReachable = true, true
	case AddLearner:
		s.add(Member{Name: a.Member, InEtcd: true, Learner: true})
	case CreatePod:
		m := &c.Members[idx(a.Member)]
		m.Pod, m.Started, m.Healthy, m.PodVersion, m.PodConfigHash = PodRunning, true, true, c.Version, c.ConfigHash
	case Promote:
		c.Members[idx(a.Member)].Learner = false
	case MoveLeader:
		for i := range c.Members {
			c.Members[i].Leader = c.Members[i].ID == a.TargetID
		}
	case RemoveMember:
		m := &c.Members[idx(a.Member)]
		m.InEtcd, m.Healthy = false, false
	case DeletePod:
		i := idx(a.Member)
		if !c.Members[i].InEtcd {
			c.Members = append(c.Members[:i], c.Members[i+1:]...)
			return
		}
		c.Members[i].Pod, c.Members[i].Healthy = PodMissing, false
	case Upgrade:
		c.Members[idx(a.Member)].PodVersion = c.Version
	case Wait:
		s.t.Fatalf("simulation stalled: %s", a)
	}
}

func (s *sim) add(m Member) {
	m.Index = s.c.NextIndex
	m.ID = uint64(0x100 + m.Index)
	s.c.NextIndex++
	s.c.Members = append(s.c.Members, m)
	s.names = append(s.names, m.Name)
}
