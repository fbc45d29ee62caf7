// Package etcdfake provides Cluster, an in-memory fake of etcdclient.Client.
//
// It exists only because the controller tests run on envtest, which has an API server but no kubelet:
// no pod ever starts, so there is no etcd to talk to. The fake models the membership rules the operator
// depends on closely enough to drive the controller: one learner at a time, promotion only of a started
// learner that has caught up, etcd's strict-reconfig quorum checks, and leader transfer. The real
// client is tested against real etcd servers in package etcdclient; anything timing-related (etcd's 5s
// "connected long enough" rule, elections) is deliberately not modelled here.
//
// A member's endpoint is its client URL. A member added with AddLearner has no name and no client URL
// until the test calls Start, which models its pod starting.
package etcdfake

import (
	"fmt"
	"slices"
	"sync"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// FirstID is the member ID the fake gives the first member without one; later members count up.
const FirstID uint64 = 0x1000

// Cluster is a fake etcd cluster and a fake etcdclient.Client for it. It is safe for concurrent use.
// Every Client call through it sees the whole cluster, whatever endpoints the caller configured.
type Cluster struct {
	mu          sync.Mutex
	nextID      uint64
	members     []*member // in the order they were added
	leader      uint64    // 0 when no quorum of voters is up
	term        uint64
	index       uint64 // raft index; bumped by every membership change
	autoCatchUp bool
	calls       []string
	configs     []etcdclient.Config
}

type member struct {
	etcdclient.Member
	down     bool     // SetDown: the pod is not running or unreachable
	caughtUp bool     // for learners: whether the leader considers it in sync
	errors   []string // Status.Errors, e.g. alarms
}

// started reports whether the member has ever started (etcd: it has published its name).
func (m *member) started() bool { return m.Name != "" }

// up reports whether the member runs and takes part in the cluster.
func (m *member) up() bool { return m.started() && !m.down }

// New returns a cluster with the given members. Members without an ID get one counting up from
// FirstID; members with a name count as started. The first started voter is the leader.
func New(initial ...etcdclient.Member) *Cluster {
	c := &Cluster{nextID: FirstID, term: 1, index: 1}
	for _, m := range initial { // given IDs first, so generated ones cannot collide with them
		c.nextID = max(c.nextID, m.ID+1)
	}
	for _, m := range initial {
		if m.ID == 0 {
			m.ID = c.newID()
		}
		m.PeerURLs = slices.Clone(m.PeerURLs)
		m.ClientURLs = slices.Clone(m.ClientURLs)
		c.members = append(c.members, &member{Member: m, caughtUp: m.Name != ""})
	}
	c.elect()
	return c
}

// Seed returns a cluster of started voters, one per name, with the given peer and client URLs.
func Seed(names, peerURLs, clientURLs []string) *Cluster {
	if len(peerURLs) != len(names) || len(clientURLs) != len(names) {
		panic(fmt.Sprintf("etcdfake.Seed: %d names, %d peer URLs, %d client URLs", len(names), len(peerURLs), len(clientURLs)))
	}
	ms := make([]etcdclient.Member, len(names))
	for i, name := range names {
		ms[i] = etcdclient.Member{Name: name, PeerURLs: []string{peerURLs[i]}, ClientURLs: []string{clientURLs[i]}}
	}
	return New(ms...)
}

// Factory returns an etcdclient.Factory that always returns this cluster and remembers the configs.
func (c *Cluster) Factory() etcdclient.Factory {
	return func(cfg etcdclient.Config) (etcdclient.Client, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.configs = append(c.configs, cfg)
		return c, nil
	}
}

// Configs returns the configs Factory was called with, oldest first.
func (c *Cluster) Configs() []etcdclient.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.configs)
}

// Calls returns the membership changes attempted so far, oldest first, whether or not they succeeded:
// "AddLearner [http://x:2380]", "Promote 1003", "Remove 1001", "MoveLeader 1002" (IDs in hex).
// Reads (MemberList, Status, Health) are not recorded.
func (c *Cluster) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// ResetCalls forgets the recorded calls.
func (c *Cluster) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// Start models the pod of the member with this peer URL starting: the member gets its name and client
// URL and is up. With SetAutoCatchUp(true) a learner is also caught up at once. It fails when no
// member has this peer URL, as etcd refuses to start a member that was never added.
func (c *Cluster) Start(peerURL, name, clientURL string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.members, func(m *member) bool { return slices.Contains(m.PeerURLs, peerURL) })
	if i < 0 {
		return fmt.Errorf("etcdfake: start %s: no member has peer URL %s", name, peerURL)
	}
	m := c.members[i]
	m.Name, m.ClientURLs, m.down = name, []string{clientURL}, false
	if c.autoCatchUp {
		m.caughtUp = true
	}
	c.elect()
	return nil
}

// SetAutoCatchUp makes learners count as caught up as soon as they start (default false: the test
// calls SetCaughtUp).
func (c *Cluster) SetAutoCatchUp(auto bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.autoCatchUp = auto
}

// SetCaughtUp says whether the learner with this ID has caught up with the leader. Promote also needs
// the learner to have started.
func (c *Cluster) SetCaughtUp(id uint64, caughtUp bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byID(id)
	if m == nil {
		panic(fmt.Sprintf("etcdfake: SetCaughtUp: no member %x", id))
	}
	m.caughtUp = caughtUp
}

// SetDown marks a member (by name, hex ID, or peer or client URL) down or up again. Status and Health
// on a down member fail, and it no longer counts towards quorum. If the leader goes down, the first
// voter still up becomes leader when a quorum is up.
func (c *Cluster) SetDown(member string, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mustFind(member).down = down
	c.elect()
}

// SetErrors sets what Status reports in Errors for a member (by name, hex ID or URL), e.g. an alarm.
func (c *Cluster) SetErrors(member string, errs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mustFind(member).errors = slices.Clone(errs)
}

// Leader returns the leader's member ID, 0 when there is none.
func (c *Cluster) Leader() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// mustFind returns the member with this name, hex ID, peer URL or client URL; a miss is a test bug.
func (c *Cluster) mustFind(key string) *member {
	for _, m := range c.members {
		if m.Name == key || fmt.Sprintf("%x", m.ID) == key ||
			slices.Contains(m.PeerURLs, key) || slices.Contains(m.ClientURLs, key) {
			return m
		}
	}
	panic(fmt.Sprintf("etcdfake: no member %q", key))
}

func (c *Cluster) byID(id uint64) *member {
	for _, m := range c.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (c *Cluster) newID() uint64 {
	id := c.nextID
	c.nextID++
	return id
}

// voters returns the voting members, except the one with ID `except` (0: none).
func (c *Cluster) voters(except uint64) []*member {
	var vs []*member
	for _, m := range c.members {
		if !m.IsLearner && m.ID != except {
			vs = append(vs, m)
		}
	}
	return vs
}

// quorumUp reports whether more than half of the voters are up. No voters means no quorum.
func quorumUp(voters []*member) bool {
	up := 0
	for _, m := range voters {
		if m.up() {
			up++
		}
	}
	return up >= len(voters)/2+1
}

// elect keeps the leader if it is still an up voter and a quorum is up; otherwise the first up voter
// leads (a new term), or nobody without quorum.
func (c *Cluster) elect() {
	voters := c.voters(0)
	if !quorumUp(voters) {
		c.leader = 0
		return
	}
	if i := slices.IndexFunc(voters, func(m *member) bool { return m.ID == c.leader }); i >= 0 && voters[i].up() {
		return
	}
	for _, m := range voters {
		if m.up() {
			c.leader = m.ID
			c.term++
			return
		}
	}
}
