package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

const pollInterval = 100 * time.Millisecond

// retryWhile calls fn, each time with a fresh callTimeout context, until it returns an error that is not
// one of waitable (nil included) or until timeout. It returns fn's last error and how long it waited.
// This is how the operator is expected to treat ErrClusterNotReady and ErrLearnerNotReady: as "later".
func retryWhile(timeout time.Duration, fn func(ctx context.Context) error, waitable ...error) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err := fn(ctx)
		cancel()
		if !slices.ContainsFunc(waitable, func(w error) bool { return errors.Is(err, w) }) {
			return time.Since(start), err
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// eventually polls cond until it returns nil, failing the test with cond's last error after timeout.
func eventually(tb testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	tb.Helper()
	if _, err := retryWhile(timeout, cond, errNotYet); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// errNotYet marks a condition that eventually() should keep polling.
var errNotYet = errors.New("condition not met yet")

func notYet(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotYet, fmt.Sprintf(format, args...))
}

// assertCluster checks, through the Client under test, that etcd's membership is exactly the running
// test members, none a learner, and that every member is healthy, agrees on one leader that is among
// them, and reports no alarms. It polls briefly because followers learn of a new leader or a finished
// promotion slightly after the leader. It returns the leader's ID.
func assertCluster(tb testing.TB, tc *testCluster) uint64 {
	tb.Helper()
	running := tc.running()
	cli := tc.client(running...)
	var leader uint64
	eventually(tb, 10*time.Second, fmt.Sprintf("cluster of %d", len(running)), func(ctx context.Context) error {
		members, err := cli.MemberList(ctx)
		if err != nil {
			return notYet("%v", err)
		}
		var got, want []uint64
		for _, m := range members {
			if m.IsLearner || m.Name == "" || len(m.ClientURLs) == 0 {
				return notYet("member %+v is a learner or has not started", m)
			}
			got = append(got, m.ID)
		}
		for _, m := range running {
			want = append(want, m.id)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return notYet("member IDs %x, want %x", got, want)
		}

		leader = 0
		var clusterID uint64
		leaders := 0
		for _, m := range running {
			st, err := cli.Status(ctx, m.clientURL)
			if err != nil {
				return notYet("%v", err)
			}
			if err := cli.Health(ctx, m.clientURL, false); err != nil {
				return notYet("%v", err)
			}
			switch {
			case st.MemberID != m.id:
				return notYet("%s reports member ID %x, want %x", m.name, st.MemberID, m.id)
			case st.IsLearner:
				return notYet("%s is still a learner", m.name)
			case st.Leader == 0 || (leader != 0 && st.Leader != leader):
				return notYet("%s sees leader %x, others %x", m.name, st.Leader, leader)
			case clusterID != 0 && st.ClusterID != clusterID:
				return notYet("%s is in cluster %x, others in %x", m.name, st.ClusterID, clusterID)
			case len(st.Errors) > 0:
				return notYet("%s reports errors %v", m.name, st.Errors)
			case st.Version == "" || st.DBSize == 0 || st.RaftAppliedIndex == 0 || st.RaftTerm == 0:
				return notYet("%s reports an incomplete status %+v", m.name, st)
			}
			leader, clusterID = st.Leader, st.ClusterID
			if st.MemberID == st.Leader {
				leaders++
			}
		}
		if leaders != 1 {
			return notYet("%d members report themselves as leader", leaders)
		}
		return nil
	})
	return leader
}

// addMember grows the cluster by one the way the operator does: add a learner, start it, promote it.
// It returns the new member and how long AddLearner was refused by the strict reconfiguration check.
func addMember(tb testing.TB, tc *testCluster) (*testMember, time.Duration) {
	tb.Helper()
	cli := tc.client()
	m := tc.newMember()
	var learner etcdclient.Member
	waited, err := retryWhile(30*time.Second, func(ctx context.Context) error {
		var err error
		learner, err = cli.AddLearner(ctx, []string{m.peerURL})
		return err
	}, etcdclient.ErrClusterNotReady)
	if err != nil {
		tb.Fatalf("add learner: %v", err)
	}
	if !learner.IsLearner || learner.ID == 0 || !slices.Equal(learner.PeerURLs, []string{m.peerURL}) {
		tb.Fatalf("AddLearner returned %+v, want a learner with peer URL %s", learner, m.peerURL)
	}
	members, err := cli.MemberList(callCtx(tb))
	if err != nil {
		tb.Fatalf("member list after add: %v", err)
	}
	if err := tc.join(m, members); err != nil {
		tb.Fatal(err)
	}
	if m.id != learner.ID {
		tb.Fatalf("started member has ID %x, AddLearner said %x", m.id, learner.ID)
	}
	if _, err := retryWhile(20*time.Second, func(ctx context.Context) error {
		return cli.Promote(ctx, learner.ID)
	}, etcdclient.ErrLearnerNotReady); err != nil {
		tb.Fatalf("promote: %v", err)
	}
	return m, waited
}

// removeMember shrinks the cluster by one: if victim leads, leadership moves to another member first
// (so the cluster never waits for an election), then victim is removed and its server stopped.
func removeMember(tb testing.TB, tc *testCluster, victim *testMember) {
	tb.Helper()
	cli := tc.client()
	st, err := cli.Status(callCtx(tb), victim.clientURL)
	if err != nil {
		tb.Fatalf("status of victim: %v", err)
	}
	if st.Leader == victim.id {
		var to *testMember
		for _, m := range tc.running() {
			if m != victim {
				to = m
				break
			}
		}
		if err := cli.MoveLeader(callCtx(tb), to.id); err != nil {
			tb.Fatalf("move leader away from %s: %v", victim.name, err)
		}
		eventually(tb, 5*time.Second, "leader moved", func(ctx context.Context) error {
			st, err := cli.Status(ctx, to.clientURL)
			if err != nil || st.Leader != to.id {
				return notYet("leader %x (err %v), want %x", st.Leader, err, to.id)
			}
			return nil
		})
	}
	// Send the removal to the other members: a member handling its own removal stops while answering.
	others := tc.client(slices.DeleteFunc(tc.running(), func(m *testMember) bool { return m == victim })...)
	if _, err := retryWhile(20*time.Second, func(ctx context.Context) error {
		return others.Remove(ctx, victim.id)
	}, etcdclient.ErrClusterNotReady); err != nil {
		tb.Fatalf("remove %s: %v", victim.name, err)
	}
	tc.stop(victim)
}
