package workload_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/quorumkit/etcd-operator/operator/internal/localport"
)

// Real etcd members in this process, on loopback, for the workload and its checks to run against.
// Set WORKLOAD_TEST_LOG=1 to see the servers' warnings.

type member struct {
	name, peerURL, clientURL, dir string
	etcd                          *embed.Etcd // nil while stopped
}

type cluster struct {
	tb      testing.TB
	initial string
	members []*member
}

// startCluster bootstraps n members statically and waits until all are ready.
func startCluster(tb testing.TB, n int) *cluster {
	tb.Helper()
	c := &cluster{tb: tb}
	tb.Cleanup(c.stopAll)
	var initial []string
	for i := range n {
		m := &member{
			name:      fmt.Sprintf("m%d", i),
			peerURL:   "http://" + freeAddr(tb),
			clientURL: "http://" + freeAddr(tb),
			dir:       tb.TempDir(),
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range c.members { // a static cluster's members wait for each other: start them together
		wg.Go(func() { errs[i] = c.start(i, embed.ClusterStateFlagNew) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

func (c *cluster) start(i int, state string) error {
	m := c.members[i]
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = m.name, m.dir
	cfg.ClusterState, cfg.InitialCluster, cfg.InitialClusterToken = state, c.initial, "workload-test"
	cfg.ListenPeerUrls = []url.URL{mustURL(m.peerURL)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.ListenClientUrls = []url.URL{mustURL(m.clientURL)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	if os.Getenv("WORKLOAD_TEST_LOG") == "" {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	} else {
		cfg.LogLevel = "warn"
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("start %s: %w", m.name, err)
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("start %s: not ready after 30s", m.name)
	}
	m.etcd = e
	return nil
}

// kill stops member i abruptly (no leadership hand-off), as a crash would; its data stays.
func (c *cluster) kill(i int) {
	if e := c.members[i].etcd; e != nil {
		c.members[i].etcd = nil
		e.Server.HardStop()
		e.Close()
	}
}

// restart starts a killed member again on its data dir.
func (c *cluster) restart(i int) {
	c.tb.Helper()
	if err := c.start(i, embed.ClusterStateFlagExisting); err != nil {
		c.tb.Fatal(err)
	}
}

// leader returns the index of the member that leads.
func (c *cluster) leader() int {
	c.tb.Helper()
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	c.tb.Fatal("no member leads")
	return -1
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL)
	}
	return eps
}

func (c *cluster) stopAll() {
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Go(func() { c.kill(i) })
	}
	wg.Wait()
}

// countingDialer dials like net.Dialer and counts, so tests can tell the workload used the dialer given.
type countingDialer struct{ dials atomic.Int64 }

func (d *countingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// freeAddr returns a loopback address nobody listens on (see package localport). A joining member's
// ports are chosen before AddLearner and bound only after it, which is why they come from below the
// kernel's ephemeral range.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := localport.Free()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

func mustURL(s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return *u
}
