package floor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Leader returns the index of the member that currently leads.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer func() { _ = cli.Close() }()
	for i, ep := range c.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			return 0, fmt.Errorf("status of %s: %w", ep, err)
		}
		if st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no member of %v leads", c.Endpoints())
}

// Floors holds repeated measurements for one cluster size.
type Floors struct {
	Members int
	// Bootstrap: processes started to all members healthy.
	Bootstrap []time.Duration
	// FollowerRecovery and LeaderRecovery: a member (a follower, then the leader) killed with SIGKILL and
	// restarted on its data dir, to all members healthy again.
	FollowerRecovery []time.Duration
	LeaderRecovery   []time.Duration
}

func (f Floors) String() string {
	return fmt.Sprintf("%d members, median of %d: bootstrap %s, follower failure to all healthy %s, leader failure to all healthy %s",
		f.Members, len(f.Bootstrap), Median(f.Bootstrap), Median(f.FollowerRecovery), Median(f.LeaderRecovery))
}

// Measure bootstraps a fresh cluster of n members runs times under dir and, in each, recovers from the
// loss of a follower and then of the leader. Each run's cluster is stopped before the next starts.
func Measure(ctx context.Context, binary string, n, runs int, dir string, extraArgs ...string) (Floors, error) {
	f := Floors{Members: n}
	for run := range runs {
		// Per size and run: a directory reused by another bootstrap would restart its members on old data.
		c, boot, err := Bootstrap(ctx, binary, n, filepath.Join(dir, fmt.Sprintf("%d-members-run%d", n, run)), extraArgs...)
		if err != nil {
			return f, err
		}
		follower, leader, err := measureRecoveries(ctx, c)
		c.Stop()
		if err != nil {
			return f, fmt.Errorf("run %d: %w", run, err)
		}
		f.Bootstrap = append(f.Bootstrap, boot)
		f.FollowerRecovery = append(f.FollowerRecovery, follower)
		f.LeaderRecovery = append(f.LeaderRecovery, leader)
	}
	return f, nil
}

func measureRecoveries(ctx context.Context, c *Cluster) (follower, leader time.Duration, err error) {
	l, err := c.Leader(ctx)
	if err != nil {
		return 0, 0, err
	}
	if follower, err = c.FailureRecovery(ctx, (l+1)%len(c.members)); err != nil {
		return 0, 0, err
	}
	if l, err = c.Leader(ctx); err != nil {
		return 0, 0, err
	}
	if leader, err = c.FailureRecovery(ctx, l); err != nil {
		return 0, 0, err
	}
	return follower, leader, nil
}

// Median returns the middle value (the lower middle for an even count), or 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
