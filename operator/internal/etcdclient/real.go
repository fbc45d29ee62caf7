package etcdclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// dialTimeout bounds connection set-up. clientv3.New does not block on dialing unless
	// grpc.WithBlock is given (we never give it), so this only limits the initial handshake.
	dialTimeout = 2 * time.Second
	// keepAliveTime/keepAliveTimeout let gRPC notice a dead member without waiting for TCP timeouts.
	// The etcd server refuses pings more often than every 5s, so keepAliveTime must stay above that.
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second
	// defaultCallTimeout applies only when the caller's context has no deadline. clientv3 sends every
	// RPC with gRPC's WaitForReady, so a call to a member that is down waits until the context ends;
	// without this a forgotten deadline would wedge a reconcile worker forever.
	defaultCallTimeout = 30 * time.Second
)

// New returns a Client backed by go.etcd.io/etcd/client/v3. Cluster-wide calls (MemberList,
// AddLearner, Promote, Remove) go through one client load-balanced over cfg.Endpoints; per-endpoint
// calls (Status, Health, and MoveLeader, which must reach the leader) use one cached client per
// endpoint. New does not contact etcd, so it succeeds even when every endpoint is down.
func New(cfg Config) (Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd client: no endpoints")
	}
	cfg.Endpoints = append([]string(nil), cfg.Endpoints...)
	cluster, err := clientv3.New(clientConfig(cfg, cfg.Endpoints))
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return &client{cfg: cfg, cluster: cluster, endpoints: map[string]*endpointClient{}}, nil
}

// clientConfig is the clientv3 configuration shared by the cluster client and per-endpoint clients.
func clientConfig(cfg Config, endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		TLS:                  cfg.TLS,
		// The operator logs outcomes itself; clientv3's own logging of every retry is noise.
		Logger: zap.NewNop(),
		// AutoSyncInterval stays 0: the client must talk to exactly the endpoints it was given
		// (the operator decides which members are reachable), not to whatever etcd advertises.
	}
}

// client implements Client.
type client struct {
	cfg     Config
	cluster *clientv3.Client // load-balanced over cfg.Endpoints

	mu        sync.Mutex
	closed    bool
	endpoints map[string]*endpointClient // by endpoint URL
}

// endpointClient talks to exactly one member.
type endpointClient struct {
	cli *clientv3.Client
	// maintenance sends Status over cli's existing connection. (cli.Maintenance.Status dials a new
	// connection on every call, which is what we want to avoid by caching.)
	maintenance clientv3.Maintenance
}

// endpoint returns the cached client for one endpoint, creating it on first use. Endpoints are client
// URLs of members; in Kubernetes they are stable per-pod DNS names, so the cache stays small.
func (c *client) endpoint(ep string) (*endpointClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("etcd client is closed")
	}
	if ec, ok := c.endpoints[ep]; ok {
		return ec, nil
	}
	cli, err := clientv3.New(clientConfig(c.cfg, []string{ep}))
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", ep, err)
	}
	ec := &endpointClient{
		cli:         cli,
		maintenance: clientv3.NewMaintenanceFromMaintenanceClient(pb.NewMaintenanceClient(cli.ActiveConnection()), cli),
	}
	c.endpoints[ep] = ec
	return ec, nil
}

// Close closes the cluster client and every cached per-endpoint client.
func (c *client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	errs := []error{c.cluster.Close()}
	for ep, ec := range c.endpoints {
		if err := ec.cli.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close client for %s: %w", ep, err))
		}
	}
	c.endpoints = nil
	return errors.Join(errs...)
}

// withDefaultTimeout bounds ctx by defaultCallTimeout unless it already has a deadline.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultCallTimeout)
}
