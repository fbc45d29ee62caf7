package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// TestPromoteLearnerNotCaughtUp adds a learner but does not start its server, so it has applied nothing
// while the voters hold 100 keys. Promote must then say ErrLearnerNotReady — whichever voter receives
// it, since followers forward promotions to the leader — and succeed once the learner has started.
func TestPromoteLearnerNotCaughtUp(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	voters := tc.running()
	putKeys(t, clientURLs(voters), 100)

	cli := tc.client()
	m := tc.newMember()
	var learner etcdclient.Member
	if _, err := retryWhile(20*time.Second, func(ctx context.Context) error {
		var err error
		learner, err = cli.AddLearner(ctx, []string{m.peerURL})
		return err
	}, etcdclient.ErrClusterNotReady); err != nil {
		t.Fatalf("add learner: %v", err)
	}

	// Before it starts, etcd lists the learner without a name or client URLs.
	members, err := cli.MemberList(callCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(members, func(mm etcdclient.Member) bool { return mm.ID == learner.ID })
	if i < 0 || !members[i].IsLearner || members[i].Name != "" || len(members[i].ClientURLs) != 0 {
		t.Fatalf("member list %+v: want learner %x without name or client URLs", members, learner.ID)
	}

	for _, v := range voters {
		err := tc.client(v).Promote(callCtx(t), learner.ID)
		if !errors.Is(err, etcdclient.ErrLearnerNotReady) {
			t.Fatalf("promote via %s: got %v, want ErrLearnerNotReady", v.name, err)
		}
		if want := fmt.Sprintf("promote member %x: ", learner.ID); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q does not start with %q", err, want)
		}
	}

	if err := tc.join(m, members); err != nil {
		t.Fatal(err)
	}
	waited, err := retryWhile(20*time.Second, func(ctx context.Context) error {
		return cli.Promote(ctx, learner.ID)
	}, etcdclient.ErrLearnerNotReady)
	if err != nil {
		t.Fatalf("promote after start: %v", err)
	}
	t.Logf("promote succeeded %s after the learner started", waited.Round(time.Millisecond))
	assertCluster(t, tc)
}

// TestRemoveLeaderAfterMoveLeader moves leadership off a member and then removes that member. The
// Client is given only the followers' endpoints, so MoveLeader must find the leader's URL itself.
func TestRemoveLeaderAfterMoveLeader(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	oldLeader := tc.byID(assertCluster(t, tc))
	followers := slices.DeleteFunc(tc.running(), func(m *testMember) bool { return m == oldLeader })
	cli := tc.client(followers...)
	to := followers[0]

	if err := cli.MoveLeader(callCtx(t), to.id); err != nil {
		t.Fatalf("move leader: %v", err)
	}
	// MoveLeader returns once the old leader has seen the change; the others follow quickly.
	for _, m := range tc.running() {
		eventually(t, 5*time.Second, "new leader seen by "+m.name, func(ctx context.Context) error {
			st, err := cli.Status(ctx, m.clientURL)
			if err != nil || st.Leader != to.id {
				return notYet("%s sees leader %x (err %v), want %x", m.name, st.Leader, err, to.id)
			}
			return nil
		})
	}
	// Moving to the current leader is a no-op.
	if err := cli.MoveLeader(callCtx(t), to.id); err != nil {
		t.Fatalf("move leader to the current leader: %v", err)
	}

	if _, err := retryWhile(20*time.Second, func(ctx context.Context) error {
		return cli.Remove(ctx, oldLeader.id)
	}, etcdclient.ErrClusterNotReady); err != nil {
		t.Fatalf("remove old leader: %v", err)
	}
	tc.stop(oldLeader)
	if leader := assertCluster(t, tc); leader != to.id {
		t.Fatalf("leader after removal is %x, want %x", leader, to.id)
	}
}

// putKeys writes n keys through a plain clientv3 client, so learners have something to catch up on.
func putKeys(t *testing.T, endpoints []string, n int) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	for i := range n {
		if _, err := cli.Put(callCtx(t), fmt.Sprintf("key-%03d", i), strings.Repeat("v", 1024)); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
}
