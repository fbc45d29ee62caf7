package etcdfake

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

func seed3() *Cluster {
	return Seed([]string{"e0", "e1", "e2"},
		[]string{"http://e0:2380", "http://e1:2380", "http://e2:2380"},
		[]string{"http://e0:2379", "http://e1:2379", "http://e2:2379"})
}

// TestRefusals checks that the fake refuses what etcd refuses, with the etcdclient sentinels.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		setup func(c *Cluster) // may leave a learner with ID FirstID+3
		op    func(c *Cluster) error
		want  error // nil: must succeed
	}{
		{"second learner", addLearner,
			func(c *Cluster) error { _, err := c.AddLearner(ctx, []string{"http://e4:2380"}); return err },
			etcdclient.ErrTooManyLearners},
		{"add learner with a voter down", func(c *Cluster) { c.SetDown("e1", true) },
			func(c *Cluster) error { _, err := c.AddLearner(ctx, []string{"http://e3:2380"}); return err },
			etcdclient.ErrClusterNotReady},
		{"promote learner that has not started", addLearner,
			func(c *Cluster) error { return c.Promote(ctx, FirstID+3) },
			etcdclient.ErrLearnerNotReady},
		{"promote started learner not caught up", startLearner,
			func(c *Cluster) error { return c.Promote(ctx, FirstID+3) },
			etcdclient.ErrLearnerNotReady},
		{"promote caught-up learner", func(c *Cluster) { startLearner(c); c.SetCaughtUp(FirstID+3, true) },
			func(c *Cluster) error { return c.Promote(ctx, FirstID+3) },
			nil},
		{"remove voter while another is down", func(c *Cluster) { c.SetDown("e1", true) },
			func(c *Cluster) error { return c.Remove(ctx, FirstID+2) },
			etcdclient.ErrClusterNotReady},
		{"remove the down voter", func(c *Cluster) { c.SetDown("e1", true) },
			func(c *Cluster) error { return c.Remove(ctx, FirstID+1) },
			nil},
		{"remove voter leaving a never-started learner", addLearner,
			func(c *Cluster) error { return c.Remove(ctx, FirstID) },
			nil},
		{"remove last voter", func(c *Cluster) {
			must(t, c.Remove(ctx, FirstID+1))
			must(t, c.Remove(ctx, FirstID+2))
		}, func(c *Cluster) error { return c.Remove(ctx, FirstID) },
			etcdclient.ErrClusterNotReady},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := seed3()
			if tt.setup != nil {
				tt.setup(c)
			}
			err := tt.op(c)
			if tt.want == nil && err != nil {
				t.Fatalf("got %v, want success", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestScaleUpAndLeaderLoss walks the operator's happy path and records the calls.
func TestScaleUpAndLeaderLoss(t *testing.T) {
	ctx := context.Background()
	c := seed3()
	c.SetAutoCatchUp(true)
	l, err := c.AddLearner(ctx, []string{"http://e3:2380"})
	must(t, err)
	if l.ID != FirstID+3 || !l.IsLearner || l.Name != "" || len(l.ClientURLs) != 0 {
		t.Fatalf("new learner %+v", l)
	}
	if err := c.Health(ctx, "http://e3:2379", true); err == nil {
		t.Fatal("health of a learner that has not started succeeded")
	}
	must(t, c.Start("http://e3:2380", "e3", "http://e3:2379"))
	must(t, c.Health(ctx, "http://e3:2379", true))
	if err := c.Health(ctx, "http://e3:2379", false); err == nil {
		t.Fatal("linearizable health of a learner succeeded")
	}
	must(t, c.Promote(ctx, l.ID))
	must(t, c.MoveLeader(ctx, l.ID))
	st, err := c.Status(ctx, "http://e0:2379")
	must(t, err)
	if st.Leader != l.ID || st.MemberID != FirstID || st.IsLearner {
		t.Fatalf("status %+v", st)
	}

	// The leader goes down: another voter takes over; calls to the down member fail.
	c.SetDown("e3", true)
	if lead := c.Leader(); lead == 0 || lead == l.ID {
		t.Fatalf("leader after the leader went down: %x", lead)
	}
	if _, err := c.Status(ctx, "http://e3:2379"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("status of a down member: %v", err)
	}
	// Two of four down: no quorum, no leader, no member list.
	c.SetDown("e2", true)
	if _, err := c.MemberList(ctx); err == nil || c.Leader() != 0 {
		t.Fatalf("member list without quorum: %v, leader %x", err, c.Leader())
	}
	c.SetDown("e2", false)
	ms, err := c.MemberList(ctx)
	must(t, err)
	if len(ms) != 4 || slices.ContainsFunc(ms, func(m etcdclient.Member) bool { return m.IsLearner }) {
		t.Fatalf("members %+v", ms)
	}

	want := []string{"AddLearner [http://e3:2380]", "Promote 1003", "MoveLeader 1003"}
	if got := c.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	cli, err := c.Factory()(etcdclient.Config{Endpoints: []string{"http://e0:2379"}})
	must(t, err)
	if cli != etcdclient.Client(c) || len(c.Configs()) != 1 {
		t.Fatal("factory did not hand out the fake or did not record the config")
	}
}

func addLearner(c *Cluster) {
	if _, err := c.AddLearner(context.Background(), []string{"http://e3:2380"}); err != nil {
		panic(err)
	}
}

func startLearner(c *Cluster) {
	addLearner(c)
	if err := c.Start("http://e3:2380", "e3", "http://e3:2379"); err != nil {
		panic(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
