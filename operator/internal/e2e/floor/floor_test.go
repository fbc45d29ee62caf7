package floor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/floor"
)

// etcdBinary is <repo>/bin/etcd, which `make envtest-tools` builds. A missing binary fails the tests.
func etcdBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			bin := filepath.Join(dir, "bin", "etcd")
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("%v: build it with `make envtest-tools`", err)
			}
			return bin
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func TestBootstrapHealthyThenStopLeavesNothing(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, elapsed, err := floor.Bootstrap(ctx, etcdBinary(t), n, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			stopped := false
			defer func() {
				if !stopped {
					c.Stop()
				}
			}()
			t.Logf("%d members healthy %s after start", n, elapsed.Round(time.Millisecond))
			if len(c.Endpoints()) != n || elapsed <= 0 {
				t.Fatalf("endpoints %v, elapsed %s", c.Endpoints(), elapsed)
			}
			assertOneCluster(t, ctx, c.Endpoints())

			pids := c.PIDs()
			c.Stop()
			stopped = true
			for _, pid := range pids {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("etcd pid %d still exists after Stop (kill 0: %v)", pid, err)
				}
			}
			for _, ep := range c.Endpoints() {
				u, _ := url.Parse(ep)
				if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
					_ = conn.Close()
					t.Errorf("%s still accepts connections after Stop", ep)
				}
			}
		})
	}
}

// assertOneCluster checks, through etcd's own API, that the members form one cluster of len(endpoints)
// voting members and that a write through one member is read linearizably through every other.
func assertOneCluster(t *testing.T, ctx context.Context, endpoints []string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != len(endpoints) {
		t.Fatalf("member list has %d members, want %d", len(ml.Members), len(endpoints))
	}
	put, err := cli.Put(ctx, "floor", "written")
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range endpoints {
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := one.Get(ctx, "floor")
		_ = one.Close()
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != put.Header.Revision {
			t.Errorf("linearizable get through %s: %v %v, want the write at revision %d", ep, resp, err, put.Header.Revision)
		}
	}
}

func TestFailureRecoveryRestartsKilledLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := floor.Bootstrap(ctx, etcdBinary(t), 3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := c.PIDs()
	elapsed, err := c.FailureRecovery(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader killed and restarted: all healthy after %s", elapsed.Round(time.Millisecond))
	after := c.PIDs()
	if after[leader] == before[leader] {
		t.Errorf("member %d still has pid %d: it was not restarted", leader, before[leader])
	}
	if err := syscall.Kill(before[leader], 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("killed etcd pid %d still exists (kill 0: %v)", before[leader], err)
	}
	// The restarted member rejoined with its data: still one cluster of three.
	assertOneCluster(t, ctx, c.Endpoints())
}

// TestFloors measures the floors the benchmarks compare against: median of 5 runs for 3 and 5 members.
func TestFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about a minute")
	}
	dir := t.TempDir() // one directory for both sizes, as the benchmark passes it
	for _, n := range []int{3, 5} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		f, err := floor.Measure(ctx, etcdBinary(t), n, 5, dir)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n  bootstrap %v\n  follower %v\n  leader %v", f, f.Bootstrap, f.FollowerRecovery, f.LeaderRecovery)
		if len(f.Bootstrap) != 5 || floor.Median(f.Bootstrap) <= 0 || floor.Median(f.LeaderRecovery) <= 0 {
			t.Errorf("incomplete measurements: %+v", f)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 2},
	} {
		if got := floor.Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
