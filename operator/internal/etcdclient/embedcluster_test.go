package etcdclient_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
	"github.com/quorumkit/etcd-operator/operator/internal/localport"
)

// This file starts real etcd members in-process (go.etcd.io/etcd/server/v3/embed) on loopback so the
// real Client is tested against etcd's actual membership rules, including --strict-reconfig-check,
// which stays at its default (on).
//
// Set ETCDCLIENT_TEST_LOG=1 to see the servers' warnings on stderr.

const (
	memberStartTimeout = 20 * time.Second
	callTimeout        = 5 * time.Second
)

// testCluster is a set of embedded etcd members. It knows which members it has started and stopped;
// etcd's own view comes from the Client under test.
type testCluster struct {
	tb   testing.TB
	mu   sync.Mutex
	next int
	// members by name, including stopped ones (etcd == nil) so tests can still use their URLs.
	members map[string]*testMember
}

type testMember struct {
	name      string
	peerURL   string
	clientURL string
	dir       string
	id        uint64      // set once started
	etcd      *embed.Etcd // nil when not running
}

// startCluster bootstraps a static cluster of n members and waits until all are ready.
func startCluster(tb testing.TB, n int) *testCluster {
	tb.Helper()
	tc := &testCluster{tb: tb, members: map[string]*testMember{}}
	tb.Cleanup(tc.stopAll)
	var ms []*testMember
	var initial []string
	for range n {
		m := tc.newMember()
		ms = append(ms, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	// Members of a static cluster wait for each other before becoming ready, so start them together.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tc.start(m, embed.ClusterStateFlagNew, strings.Join(initial, ","))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("start cluster of %d: %v", n, err)
		}
	}
	return tc
}

// newMember reserves a name, ports and a data dir for a member that is not started yet.
func (tc *testCluster) newMember() *testMember {
	tc.tb.Helper()
	tc.mu.Lock()
	tc.next++
	name := fmt.Sprintf("m%d", tc.next)
	tc.mu.Unlock()
	m := &testMember{
		name:      name,
		peerURL:   "http://" + freeAddr(tc.tb),
		clientURL: "http://" + freeAddr(tc.tb),
		dir:       tc.tb.TempDir(),
	}
	tc.mu.Lock()
	tc.members[name] = m
	tc.mu.Unlock()
	return m
}

// join starts m as a member that was already added to the cluster (normally as a learner).
// members is etcd's member list after the add; every member in it must have started once except m,
// because etcd's --initial-cluster wants name=peerURL pairs.
func (tc *testCluster) join(m *testMember, members []etcdclient.Member) error {
	var initial []string
	for _, em := range members {
		name := em.Name
		if slices.Contains(em.PeerURLs, m.peerURL) {
			name = m.name
		}
		if name == "" {
			return fmt.Errorf("join %s: member %x has not started, cannot build --initial-cluster", m.name, em.ID)
		}
		for _, u := range em.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	return tc.start(m, embed.ClusterStateFlagExisting, strings.Join(initial, ","))
}

func (tc *testCluster) start(m *testMember, state, initialCluster string) error {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ClusterState = state
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = "etcdclient-test"
	cfg.ListenPeerUrls = []url.URL{mustURL(m.peerURL)}
	cfg.AdvertisePeerUrls = []url.URL{mustURL(m.peerURL)}
	cfg.ListenClientUrls = []url.URL{mustURL(m.clientURL)}
	cfg.AdvertiseClientUrls = []url.URL{mustURL(m.clientURL)}
	if os.Getenv("ETCDCLIENT_TEST_LOG") == "" {
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
	case <-time.After(memberStartTimeout):
		e.Close()
		return fmt.Errorf("start %s: not ready after %s", m.name, memberStartTimeout)
	}
	tc.mu.Lock()
	m.etcd = e
	m.id = uint64(e.Server.MemberID())
	tc.mu.Unlock()
	return nil
}

// stop closes a member's server as etcd does on SIGTERM (a pod being deleted): a leader first hands
// leadership to another member. Its data dir stays.
func (tc *testCluster) stop(m *testMember) { tc.shutdown(m, false) }

// shutdown stops m's server if it runs. hard skips the leadership hand-off.
func (tc *testCluster) shutdown(m *testMember, hard bool) {
	tc.mu.Lock()
	e := m.etcd
	m.etcd = nil
	tc.mu.Unlock()
	if e == nil {
		return
	}
	if hard {
		e.Server.HardStop()
	}
	e.Close()
}

// stopAll stops every member at once. It skips etcd's leadership hand-off: with all members stopping,
// a leader would wait ReqTimeout (7s) for a transferee that is itself going away.
func (tc *testCluster) stopAll() {
	tc.mu.Lock()
	ms := make([]*testMember, 0, len(tc.members))
	for _, m := range tc.members {
		ms = append(ms, m)
	}
	tc.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { tc.shutdown(m, true) })
	}
	wg.Wait()
}

// running returns the running members sorted by name.
func (tc *testCluster) running() []*testMember {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var ms []*testMember
	for _, m := range tc.members {
		if m.etcd != nil {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *testMember) int { return strings.Compare(a.name, b.name) })
	return ms
}

func (tc *testCluster) byID(id uint64) *testMember {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, m := range tc.members {
		if m.id == id {
			return m
		}
	}
	tc.tb.Fatalf("no test member with ID %x", id)
	return nil
}

// client opens the Client under test on the given members' client URLs (all running ones if none).
func (tc *testCluster) client(ms ...*testMember) etcdclient.Client {
	tc.tb.Helper()
	if len(ms) == 0 {
		ms = tc.running()
	}
	cli, err := etcdclient.New(etcdclient.Config{Endpoints: clientURLs(ms)})
	if err != nil {
		tc.tb.Fatalf("new client: %v", err)
	}
	tc.tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

func clientURLs(ms []*testMember) []string {
	urls := make([]string, 0, len(ms))
	for _, m := range ms {
		urls = append(urls, m.clientURL)
	}
	return urls
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

// callCtx is the per-call deadline used by tests; each Client call gets its own.
func callCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	tb.Cleanup(cancel)
	return ctx
}
