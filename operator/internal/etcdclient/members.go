package etcdclient

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// MemberList returns the members as a reachable endpoint sees them. clientv3 v3.6 asks for a
// linearizable member list by default, so the answer reflects every committed membership change
// rather than one member's possibly stale view; it therefore needs a quorum.
func (c *client) MemberList(ctx context.Context) ([]Member, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	resp, err := c.cluster.MemberList(ctx)
	if err != nil {
		return nil, wrapf(err, "list members via %v", c.cfg.Endpoints)
	}
	members := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		members = append(members, memberFromPB(m))
	}
	return members, nil
}

// AddLearner adds a learner. etcd allows one learner at a time by default (ErrTooManyLearners) and
// refuses the change until all voters have been connected for 5s (ErrClusterNotReady).
func (c *client) AddLearner(ctx context.Context, peerURLs []string) (Member, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	resp, err := c.cluster.MemberAddAsLearner(ctx, peerURLs)
	if err != nil {
		return Member{}, wrapf(err, "add learner %v", peerURLs)
	}
	return memberFromPB(resp.Member), nil
}

// Promote makes a learner a voter. Only the leader knows whether the learner has caught up; a follower
// forwards the request to it, and the leader's refusal comes back as ErrLearnerNotReady.
func (c *client) Promote(ctx context.Context, id uint64) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := c.cluster.MemberPromote(ctx, id); err != nil {
		return wrapf(err, "promote member %x", id)
	}
	return nil
}

// Remove removes a member. Removing a voter is refused with ErrClusterNotReady when the remaining
// voters that are connected would not form a quorum.
func (c *client) Remove(ctx context.Context, id uint64) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := c.cluster.MemberRemove(ctx, id); err != nil {
		return wrapf(err, "remove member %x", id)
	}
	return nil
}

func memberFromPB(m *pb.Member) Member {
	if m == nil {
		return Member{}
	}
	return Member{
		ID:         m.ID,
		Name:       m.Name,
		PeerURLs:   append([]string(nil), m.PeerURLs...),
		ClientURLs: append([]string(nil), m.ClientURLs...),
		IsLearner:  m.IsLearner,
	}
}
