package plan

import (
	"testing"
)

// FuzzNext builds arbitrary observations from bytes and checks that the planner's one action never
// breaks a safety invariant: never below quorum, never two learners, never the last healthy voter.
func FuzzNext(f *testing.F) {
	f.Add([]byte{3, 3, 0xff, 0xff, 0xff})
	f.Add([]byte{5, 3, 0x0f, 0xf0, 0x33, 0x01, 0x80})
	f.Add([]byte{1, 2, 0x10, 0x20})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := clusterFromBytes(data)
		a := Next(c)
		if err := CheckInvariants(c, a); err != nil {
			t.Fatalf("%v\ncluster: %+v", err, c)
		}
		if a.Kind != None && (a.Reason == "" || a.Message == "") {
			t.Fatalf("action without reason or message: %+v", a)
		}
	})
}

// clusterFromBytes decodes: size, member count, flags byte; then one byte per member whose bits set
// in-etcd, learner, started, healthy, leader, Pod state (3 bits, mod 6). A second learner and a second
// leader are dropped, as etcd allows neither.
func clusterFromBytes(data []byte) Cluster {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	c := Cluster{Name: "e", Version: v6, ConfigHash: hash}
	c.Size = int(next()%9) + 1
	n := int(next() % 10)
	flags := next()
	c.Persistent = flags&1 != 0
	c.Paused = flags&2 != 0 && flags&4 != 0
	c.Bootstrapped = flags&8 == 0 || flags&16 != 0
	c.EtcdReachable = c.Bootstrapped && flags&32 == 0
	if flags&64 != 0 {
		c.Version = "3.6.8"
	}
	if flags&128 != 0 {
		c.ConfigHash = "h2"
	}
	haveLearner, haveLeader := false, false
	for i := range n {
		b := next()
		m := Member{Name: memberName(c, i), Index: i, ID: uint64(0x100 + i), PodVersion: v6, PodConfigHash: hash}
		m.InEtcd = b&1 != 0
		m.Learner = m.InEtcd && b&2 != 0 && !haveLearner
		haveLearner = haveLearner || m.Learner
		m.Started = b&4 != 0
		m.Healthy = m.InEtcd && b&8 != 0
		m.Leader = m.InEtcd && !m.Learner && m.Healthy && b&16 != 0 && !haveLeader
		haveLeader = haveLeader || m.Leader
		m.Pod = PodState((b >> 5) % 6)
		m.HasPVC = c.Persistent && i%2 == 0
		if m.Pod == PodMissing {
			m.PodVersion, m.PodConfigHash = "", ""
		} else if b&0x80 != 0 {
			m.PodVersion = "3.6.8"
		}
		c.Members = append(c.Members, m)
	}
	c.NextIndex = n
	return c
}
