package etcdclient

import (
	"context"
	"errors"
	"fmt"
)

// MoveLeader transfers leadership to member `to`. etcd only accepts MoveLeader on the current leader,
// so this first finds the leader among the configured endpoints and then sends the request to it.
// It returns nil when `to` already leads. When it returns, the old leader has seen `to` become leader.
func (c *client) MoveLeader(ctx context.Context, to uint64) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	leader, endpoint, err := c.findLeader(ctx)
	if err != nil {
		return fmt.Errorf("move leader to %x: %w", to, err)
	}
	if leader == to {
		return nil
	}
	ec, err := c.endpoint(endpoint)
	if err != nil {
		return wrapf(err, "move leader from %x to %x", leader, to)
	}
	if _, err := ec.cli.MoveLeader(ctx, to); err != nil {
		return wrapf(err, "move leader from %x (%s) to %x", leader, endpoint, to)
	}
	return nil
}

type statusResult struct {
	status Status
	err    error
}

// findLeader returns the leader's member ID and a client URL to reach it. It asks all configured
// endpoints in parallel because a member that is down only answers when ctx ends; it stops as soon as
// a member reports itself as leader. If the leader is not among the configured endpoints, its client
// URL comes from the member list.
func (c *client) findLeader(ctx context.Context) (uint64, string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // abandons the Status calls still waiting on members that are down
	results := make(chan statusResult, len(c.cfg.Endpoints))
	for _, ep := range c.cfg.Endpoints {
		go func() {
			st, err := c.Status(ctx, ep)
			results <- statusResult{st, err}
		}()
	}

	// Prefer the view with the highest term: a member cut off from the others may still name an old leader.
	var best Status
	var errs []error
	for range c.cfg.Endpoints {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.status.Leader != 0 && r.status.Leader == r.status.MemberID {
			return r.status.Leader, r.status.Endpoint, nil
		}
		if r.status.Leader != 0 && r.status.RaftTerm >= best.RaftTerm {
			best = r.status
		}
	}
	if best.Leader == 0 {
		return 0, "", fmt.Errorf("find leader: no endpoint reports a leader: %w", errors.Join(errs...))
	}

	members, err := c.MemberList(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("find leader %x: %w", best.Leader, err)
	}
	for _, m := range members {
		if m.ID == best.Leader && len(m.ClientURLs) > 0 {
			return m.ID, m.ClientURLs[0], nil
		}
	}
	return 0, "", fmt.Errorf("find leader: leader %x has no client URL in the member list", best.Leader)
}
