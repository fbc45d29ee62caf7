package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// DialFunc opens a connection, like net.Dialer.DialContext. The local cluster's dialer has this shape: it
// creates the socket inside the cluster's network namespace.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Config describes a load. Only Endpoints is required.
type Config struct {
	// Endpoints are the cluster's client URLs, e.g. the client Service's http://10.96.x.y:2379.
	Endpoints []string
	// DialContext, if set, opens every connection (for endpoints inside another network namespace).
	DialContext DialFunc
	// Clients is the number of concurrent clients, each with its own connection (default 3).
	Clients int
	// Keys is the size of the key space (default 8). Few keys make clients collide often, which is what
	// exposes stale reads. Checking a history of N operations allocates about N²/(8·Keys) bytes (120k
	// operations on 8 keys: 0.5 GiB, 0.3 s); for runs of several minutes use more keys or a Pause.
	Keys int
	// Prefix is where keys live (default "/e2e-workload/"); each run adds a random run ID below it, so the
	// keys of a run start absent, as the checker's model assumes.
	Prefix string
	// OpTimeout bounds each operation (default 1s).
	OpTimeout time.Duration
	// Pause is slept by each client after every operation (default 0: as fast as the cluster answers).
	Pause time.Duration
	// FailureBackoff is slept after an operation that did not succeed (default 50ms), so an unavailable
	// cluster does not fill the history with unknown writes that make checking slow.
	FailureBackoff time.Duration
	// FinalReadTimeout bounds how long Stop keeps retrying the final read of each key (default 30s).
	FinalReadTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Clients == 0 {
		c.Clients = 3
	}
	if c.Keys == 0 {
		c.Keys = 8
	}
	if c.Prefix == "" {
		c.Prefix = "/e2e-workload/"
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = time.Second
	}
	if c.FailureBackoff == 0 {
		c.FailureBackoff = 50 * time.Millisecond
	}
	if c.FinalReadTimeout == 0 {
		c.FinalReadTimeout = 30 * time.Second
	}
	return c
}

// Runner is a load in progress.
type Runner struct {
	cfg     Config
	start   time.Time
	keys    []string
	clients []*clientv3.Client
	stop    chan struct{} // closed by Stop: clients finish the operation in flight and return
	wg      sync.WaitGroup
	perCli  [][]Op // one slice per client: no locking on the hot path

	mu       sync.Mutex
	progress Counts

	stopOnce sync.Once
	history  *History
}

// Start opens the clients and starts the load; it runs until Stop.
func Start(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("workload: no endpoints")
	}
	r := &Runner{cfg: cfg, perCli: make([][]Op, cfg.Clients)}
	run := randomID()
	for i := range cfg.Keys {
		r.keys = append(r.keys, fmt.Sprintf("%s%s/k%d", cfg.Prefix, run, i))
	}
	for range cfg.Clients {
		cli, err := NewClient(cfg.Endpoints, cfg.DialContext)
		if err != nil {
			r.closeClients()
			return nil, err
		}
		r.clients = append(r.clients, cli)
	}
	r.stop = make(chan struct{})
	r.start = time.Now()
	for i, cli := range r.clients {
		r.wg.Go(func() { r.loop(i, cli) })
	}
	return r, nil
}

// Run applies the load until ctx is done and returns the history, final reads included.
func Run(ctx context.Context, cfg Config) (*History, error) {
	r, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	<-ctx.Done()
	return r.Stop(), nil
}

// NewClient opens an etcd client on endpoints, dialing through dial when it is set. The caller closes it.
func NewClient(endpoints []string, dial DialFunc) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		// Keepalive finds connections that a partition left silently dead. etcd refuses pings more
		// often than every 5s (--grpc-keepalive-min-time), so stay above that.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
	}
	// Through a Service there is one address: when the member behind a connection goes away, gRPC's
	// default reconnect back-off (1 s growing to 2 minutes) would keep the client off the Service long
	// after other members are ready. A client meant to ride through rolling restarts retries sooner.
	cfg.DialOptions = []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: time.Second,
	})}
	if dial != nil {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// Keys returns the keys the load uses.
func (r *Runner) Keys() []string { return append([]string(nil), r.keys...) }

// Progress returns the counts so far, e.g. to wait until writes succeed again after a fault.
func (r *Runner) Progress() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress
}

// Stop ends the load, lets the operations in flight finish (at most OpTimeout: cancelling them would
// only turn writes into unknown ones), reads every key once more and returns the history. Calling it
// again returns the same history.
func (r *Runner) Stop() *History {
	r.stopOnce.Do(func() {
		close(r.stop)
		r.wg.Wait()
		h := &History{Start: r.start, Keys: r.Keys()}
		for _, ops := range r.perCli {
			h.Ops = append(h.Ops, ops...)
		}
		h.Ops = append(h.Ops, r.finalReads()...)
		r.closeClients()
		r.history = h
	})
	return r.history
}

func (r *Runner) loop(id int, cli *clientv3.Client) {
	for seq := 0; ; seq++ {
		select {
		case <-r.stop:
			return
		default:
		}
		key := r.keys[rand.IntN(len(r.keys))]
		var op Op
		if rand.IntN(2) == 0 {
			op = r.put(context.Background(), cli, key, fmt.Sprintf("c%d-%d", id, seq))
		} else {
			op = r.get(context.Background(), cli, key)
		}
		op.Client = id
		r.perCli[id] = append(r.perCli[id], op)
		r.count(op)
		pause := r.cfg.Pause
		if op.Outcome != OK {
			pause += r.cfg.FailureBackoff
		}
		if pause > 0 {
			select {
			case <-r.stop:
			case <-time.After(pause):
			}
		}
	}
}

func (r *Runner) count(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress.add(op)
}

// put writes value and records the outcome.
func (r *Runner) put(ctx context.Context, cli *clientv3.Client, key, value string) Op {
	op := Op{Kind: Put, Key: key, Value: value}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	op.Call = time.Since(r.start)
	resp, err := cli.Put(ctx, key, value)
	op.Return = time.Since(r.start)
	if err != nil {
		op.Outcome, op.Err = classifyPutError(err), err.Error()
		return op
	}
	op.Revision = resp.Header.Revision
	return op
}

// get reads key linearizably (clientv3's default). A failed read changes nothing, so it is Failed.
func (r *Runner) get(ctx context.Context, cli *clientv3.Client, key string) Op {
	op := Op{Kind: Get, Key: key}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	op.Call = time.Since(r.start)
	resp, err := cli.Get(ctx, key)
	op.Return = time.Since(r.start)
	if err != nil {
		op.Outcome, op.Err = Failed, err.Error()
		return op
	}
	op.Revision = resp.Header.Revision
	if len(resp.Kvs) > 0 {
		op.Found, op.Value, op.ModRevision = true, string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
	}
	return op
}

// finalReads reads each key until one read succeeds or FinalReadTimeout passes. They come after every
// other operation returned, so a lost acknowledged write shows up as a stale final read.
func (r *Runner) finalReads() []Op {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.FinalReadTimeout)
	defer cancel()
	var ops []Op
	for _, key := range r.keys {
		for ctx.Err() == nil {
			op := r.get(ctx, r.clients[0], key)
			op.Client, op.Final = -1, true
			ops = append(ops, op)
			if op.Outcome == OK {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(r.cfg.FailureBackoff):
			}
		}
	}
	return ops
}

func (r *Runner) closeClients() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// randomID names a run. It only has to differ from other runs against the same cluster.
func randomID() string { return fmt.Sprintf("%08x", rand.Uint32()) }
