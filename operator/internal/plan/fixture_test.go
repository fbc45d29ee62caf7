package plan

// Fixtures built with functional options: a healthy 3-member cluster at 3.6.7 is the starting point.

type opt func(*Cluster)

const (
	v5   = "3.5.21"
	v6   = "3.6.7"
	hash = "h1"
)

func healthy(name string, i int) Member {
	return Member{Name: name, Index: i, InEtcd: true, ID: uint64(0x100 + i), Started: true, Healthy: true,
		Pod: PodRunning, PodVersion: v6, PodConfigHash: hash}
}

func cluster(n int, opts ...opt) Cluster {
	c := Cluster{Name: "e", Size: n, Version: v6, ConfigHash: hash, Bootstrapped: true, EtcdReachable: true, NextIndex: n}
	for i := range n {
		c.Members = append(c.Members, healthy(memberName(c, i), i))
	}
	if n > 0 {
		c.Members[0].Leader = true
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func size(n int) opt { return func(c *Cluster) { c.Size = n } }

func edit(i int, f func(*Member)) opt {
	return func(c *Cluster) { f(&c.Members[i]) }
}

func leader(i int) opt {
	return func(c *Cluster) {
		for j := range c.Members {
			c.Members[j].Leader = j == i
		}
	}
}

func withLearner(started bool, pod PodState) opt {
	return func(c *Cluster) {
		m := healthy(memberName(*c, c.NextIndex), c.NextIndex)
		m.Learner, m.Started, m.Pod, m.Healthy = true, started, pod, started && pod == PodRunning
		c.Members = append(c.Members, m)
		c.NextIndex++
	}
}

func persistent() opt      { return func(c *Cluster) { c.Persistent = true; setPVC(c) } }
func version(v string) opt { return func(c *Cluster) { c.Version = v } }
func config(h string) opt  { return func(c *Cluster) { c.ConfigHash = h } }
func paused() opt          { return func(c *Cluster) { c.Paused = true } }
func unreachableEtcd() opt { return func(c *Cluster) { c.EtcdReachable = false } }
func notBootstrapped() opt {
	return func(c *Cluster) { c.Bootstrapped = false; c.EtcdReachable = false }
}
func noMembers() opt { return func(c *Cluster) { c.Members = nil } }
func setPVC(c *Cluster) {
	for i := range c.Members {
		c.Members[i].HasPVC = true
	}
}
func down(i int) opt { return edit(i, func(m *Member) { m.Healthy = false }) }
func podState(i int, s PodState) opt {
	return edit(i, func(m *Member) {
		m.Pod = s
		if s == PodMissing {
			m.PodVersion, m.PodConfigHash = "", ""
		}
	})
}
func removed(i int) opt {
	return edit(i, func(m *Member) { m.InEtcd, m.ID, m.Healthy, m.Leader = false, 0, false, false })
}
