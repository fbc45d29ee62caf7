package etcdfake

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// The errors below read like the real client's: an operation prefix, this package's sentinel where
// etcdclient has one, and etcd's own error, so callers can match either with errors.Is.

var _ etcdclient.Client = (*Cluster)(nil)

// errNoQuorum stands in for what the real client returns when no quorum answers: the caller's
// deadline expiring.
var errNoQuorum = fmt.Errorf("etcdfake: no quorum of voting members is up: %w", context.DeadlineExceeded)

// MemberList returns all members; it needs a quorum, like etcd's linearizable member list.
func (c *Cluster) MemberList(ctx context.Context) ([]etcdclient.Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !quorumUp(c.voters(0)) {
		return nil, fmt.Errorf("list members: %w", errNoQuorum)
	}
	ms := make([]etcdclient.Member, len(c.members))
	for i, m := range c.members {
		ms[i] = m.Member
		ms[i].PeerURLs = slices.Clone(m.PeerURLs)
		ms[i].ClientURLs = slices.Clone(m.ClientURLs)
	}
	return ms, nil
}

// AddLearner adds a learner that has not started. Like etcd it refuses a second learner and, as
// strict-reconfig-check does, refuses while any voter is down or has never started.
func (c *Cluster) AddLearner(ctx context.Context, peerURLs []string) (etcdclient.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("AddLearner %v", peerURLs))
	fail := func(err error) error { return fmt.Errorf("add learner %v: %w", peerURLs, err) }
	if err := ctx.Err(); err != nil {
		return etcdclient.Member{}, fail(err)
	}
	if len(peerURLs) == 0 {
		return etcdclient.Member{}, fail(fmt.Errorf("etcdfake: no peer URLs"))
	}
	for _, u := range peerURLs {
		if pu, err := url.Parse(u); err != nil || pu.Host == "" {
			return etcdclient.Member{}, fail(fmt.Errorf("etcdfake: bad peer URL %q", u))
		}
		if slices.ContainsFunc(c.members, func(m *member) bool { return slices.Contains(m.PeerURLs, u) }) {
			return etcdclient.Member{}, fail(rpctypes.ErrPeerURLExist)
		}
	}
	if slices.ContainsFunc(c.members, func(m *member) bool { return m.IsLearner }) {
		return etcdclient.Member{}, fail(fmt.Errorf("%w: %w", etcdclient.ErrTooManyLearners, rpctypes.ErrTooManyLearners))
	}
	if voters := c.voters(0); !quorumUp(voters) {
		return etcdclient.Member{}, fail(errNoQuorum)
	} else if slices.ContainsFunc(voters, func(m *member) bool { return !m.up() }) {
		return etcdclient.Member{}, fail(fmt.Errorf("%w: %w", etcdclient.ErrClusterNotReady, rpctypes.ErrUnhealthy))
	}
	m := &member{Member: etcdclient.Member{ID: c.newID(), PeerURLs: slices.Clone(peerURLs), IsLearner: true}}
	c.members = append(c.members, m)
	c.index++
	return m.Member, nil
}

// Promote makes a started, caught-up learner a voter.
func (c *Cluster) Promote(ctx context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("Promote %x", id))
	fail := func(err error) error { return fmt.Errorf("promote member %x: %w", id, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	m := c.byID(id)
	switch {
	case m == nil:
		return fail(rpctypes.ErrMemberNotFound)
	case !m.IsLearner:
		return fail(rpctypes.ErrMemberNotLearner)
	case !quorumUp(c.voters(0)):
		return fail(errNoQuorum)
	case !m.started() || !m.caughtUp:
		return fail(fmt.Errorf("%w: %w", etcdclient.ErrLearnerNotReady, rpctypes.ErrMemberLearnerNotReady))
	}
	m.IsLearner = false
	c.index++
	c.elect()
	return nil
}

// Remove removes a member. Removing a voter is refused, as strict-reconfig-check does, unless a quorum
// of the remaining voters is up.
func (c *Cluster) Remove(ctx context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("Remove %x", id))
	fail := func(err error) error { return fmt.Errorf("remove member %x: %w", id, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	m := c.byID(id)
	switch {
	case m == nil:
		return fail(rpctypes.ErrMemberNotFound)
	case !quorumUp(c.voters(0)):
		return fail(errNoQuorum)
	case !m.IsLearner && !quorumUp(c.voters(id)):
		return fail(fmt.Errorf("%w: %w", etcdclient.ErrClusterNotReady, rpctypes.ErrMemberNotEnoughStarted))
	}
	c.members = slices.DeleteFunc(c.members, func(x *member) bool { return x == m })
	c.index++
	c.elect()
	return nil
}

// MoveLeader makes `to` the leader; it must be a voter that is up.
func (c *Cluster) MoveLeader(ctx context.Context, to uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("MoveLeader %x", to))
	fail := func(err error) error { return fmt.Errorf("move leader to %x: %w", to, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if c.leader == 0 {
		return fail(errNoQuorum)
	}
	if c.leader == to {
		return nil
	}
	if m := c.byID(to); m == nil || m.IsLearner || !m.up() {
		return fail(rpctypes.ErrBadLeaderTransferee)
	}
	c.leader = to
	c.term++
	return nil
}

// Status reports the member serving this client URL. A down member fails with
// context.DeadlineExceeded, which is what the real client returns for it.
func (c *Cluster) Status(ctx context.Context, endpoint string) (etcdclient.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.reachable(ctx, endpoint)
	if err != nil {
		return etcdclient.Status{}, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	applied := c.index
	if m.IsLearner && !m.caughtUp {
		applied = 0
	}
	return etcdclient.Status{
		Endpoint:         endpoint,
		MemberID:         m.ID,
		ClusterID:        0xc1,
		Leader:           c.leader,
		Version:          "3.6.7",
		DBSize:           1 << 20,
		DBSizeInUse:      1 << 19,
		RaftIndex:        applied,
		RaftAppliedIndex: applied,
		RaftTerm:         c.term,
		IsLearner:        m.IsLearner,
		Errors:           slices.Clone(m.errors),
	}, nil
}

// Health succeeds for a member that is up, except that (like etcd) a learner refuses the linearizable
// read used when learner is false, and a voter's linearizable read needs a quorum.
func (c *Cluster) Health(ctx context.Context, endpoint string, learner bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fail := func(err error) error { return fmt.Errorf("health of %s (learner=%t): %w", endpoint, learner, err) }
	m, err := c.reachable(ctx, endpoint)
	switch {
	case err != nil:
		return fail(err)
	case m.IsLearner && !learner:
		return fail(rpctypes.ErrGRPCNotSupportedForLearner)
	case !learner && c.leader == 0:
		return fail(errNoQuorum)
	}
	return nil
}

// Close does nothing: the fake is shared by every client the Factory hands out.
func (c *Cluster) Close() error { return nil }

// reachable returns the started member with this client URL, or an error if there is none or it is down.
func (c *Cluster) reachable(ctx context.Context, endpoint string) (*member, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(c.members, func(m *member) bool { return slices.Contains(m.ClientURLs, endpoint) })
	if i < 0 {
		return nil, fmt.Errorf("etcdfake: no member serves %s: %w", endpoint, context.DeadlineExceeded)
	}
	if m := c.members[i]; !m.down {
		return m, nil
	}
	return nil, fmt.Errorf("etcdfake: member serving %s is down: %w", endpoint, context.DeadlineExceeded)
}
