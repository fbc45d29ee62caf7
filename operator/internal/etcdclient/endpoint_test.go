package etcdclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// TestMemberDown stops one of three members. Calls to it must fail by the context deadline instead of
// hanging; the rest of the cluster must keep answering through the same Client. It also shows two
// strict-reconfig rules the operator relies on: no learner may be added while a voter is down, but
// the down voter may be removed, after which adding works again.
func TestMemberDown(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	cli := tc.client() // all three endpoints, including the one about to go down
	down := tc.running()[2]
	tc.stop(down)

	for name, call := range map[string]func(ctx context.Context) error{
		"Status": func(ctx context.Context) error { _, err := cli.Status(ctx, down.clientURL); return err },
		"Health": func(ctx context.Context) error { return cli.Health(ctx, down.clientURL, false) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		err := call(ctx)
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Errorf("%s of a stopped member succeeded", name)
		}
		if elapsed > 3*time.Second {
			t.Errorf("%s of a stopped member took %s with a 2s deadline", name, elapsed)
		}
		if !strings.Contains(err.Error(), down.clientURL) {
			t.Errorf("%s error %q does not name the endpoint", name, err)
		}
	}

	members, err := cli.MemberList(callCtx(t))
	if err != nil {
		t.Fatalf("member list with one member down: %v", err)
	}
	if len(members) != 3 {
		t.Fatalf("member list has %d members, want 3", len(members))
	}
	for _, m := range tc.running() {
		if err := cli.Health(callCtx(t), m.clientURL, false); err != nil {
			t.Errorf("health of running member %s: %v", m.name, err)
		}
		if _, err := cli.Status(callCtx(t), m.clientURL); err != nil {
			t.Errorf("status of running member %s: %v", m.name, err)
		}
	}

	// Keep trying for longer than etcd's 5s HealthInterval, so a refusal cannot just be the
	// cluster being young: it must be the down voter.
	_, err = retryWhile(7*time.Second, func(ctx context.Context) error {
		_, err := cli.AddLearner(ctx, []string{"http://127.0.0.1:1"})
		return err
	}, etcdclient.ErrClusterNotReady)
	if !errors.Is(err, etcdclient.ErrClusterNotReady) {
		t.Fatalf("AddLearner with a voter down: got %v, want ErrClusterNotReady", err)
	}

	if _, err := retryWhile(10*time.Second, func(ctx context.Context) error {
		return cli.Remove(ctx, down.id)
	}, etcdclient.ErrClusterNotReady); err != nil {
		t.Fatalf("remove the down member: %v", err)
	}
	m, _ := addMember(t, tc)
	t.Logf("replaced %s by %s", down.name, m.name)
	assertCluster(t, tc)
}

// TestHealthOfLearner checks etcd's real behaviour for learners: a serializable read succeeds, a
// linearizable one is refused ("rpc not supported for learner"), and Status reports IsLearner.
func TestHealthOfLearner(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 1)
	cli := tc.client()
	m := tc.newMember()
	learner, err := cli.AddLearner(callCtx(t), []string{m.peerURL})
	if err != nil {
		t.Fatalf("add learner to a 1-member cluster: %v", err)
	}
	members, err := cli.MemberList(callCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.join(m, members); err != nil {
		t.Fatal(err)
	}

	if err := cli.Health(callCtx(t), m.clientURL, true); err != nil {
		t.Errorf("serializable health of learner: %v", err)
	}
	err = cli.Health(callCtx(t), m.clientURL, false)
	if err == nil || !strings.Contains(err.Error(), "rpc not supported for learner") {
		t.Errorf("linearizable health of learner: got %v, want etcd's 'rpc not supported for learner'", err)
	}
	st, err := cli.Status(callCtx(t), m.clientURL)
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsLearner || st.MemberID != learner.ID || st.Leader == 0 || st.Leader == learner.ID {
		t.Errorf("learner status %+v: want IsLearner, MemberID %x and another member as leader", st, learner.ID)
	}
}
