// Package node is the local cluster's node agent: a kubelet of our own that registers Nodes, renews their
// Leases and runs the Pods bound to them as plain processes through package podruntime. It exists so that
// a real Kubernetes control plane (package localcluster) can run real Pods on a machine without a
// container runtime.
//
// What it implements is what our Pods use: volumes (emptyDir, hostPath, persistentVolumeClaim, configMap,
// secret, downwardAPI, projected with service-account tokens), env with $(VAR) expansion, /etc/hosts and
// /etc/resolv.conf, images mapped to local binaries (images.yaml), uid/gid/fsGroup, probes, restart policy
// with back-off, graceful deletion, Pod status and events, a local-path volume provisioner, and node
// chaos for tests (StopNode, Partition, KillContainer).
//
// What it does not do, and says so: host networking, host PID/IPC, hostPort and native sidecars reject the
// Pod (phase Failed, reason UnsupportedByLocalcluster); unknown volume types keep it ContainerCreating
// with a FailedMount event. Resource limits, capabilities, seccomp, AppArmor and privilege escalation are
// restrictions it cannot enforce: such Pods run, less confined than on a real node. Service links for
// Services other than "kubernetes" are not injected.
//
// Differences in timing, chosen for tests: restart back-off starts at 1 s and doubles to 10 s (a kubelet
// starts at 10 s and caps at 5 min); the first restart is immediate in both.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// Options configure Start.
type Options struct {
	// Client talks to the apiserver; cluster-admin is fine.
	Client kubernetes.Interface
	// Nodes are the names of the Nodes to register and run Pods for. Node i gets the pod CIDR
	// 10.244.<i+1>.0/24.
	Nodes []string
	// Runtime runs the sandboxes. Stop closes it.
	Runtime *podruntime.Runtime
	// Dir holds the Pods' volumes, /etc files and logs, and provisioned volumes, under Dir/<node>/.
	Dir string
	// Dial opens connections inside the cluster's network namespace; probes use it to reach pod IPs.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Images maps image references to local binaries (DefaultImageTable).
	Images *ImageTable
	// DNS is what each Pod's resolv.conf names.
	DNS DNSConfig
	// KubernetesService is the kubernetes Service's ClusterIP and port (10.96.0.1:443), for the
	// KUBERNETES_SERVICE_HOST/PORT variables. Zero leaves them out.
	KubernetesService netip.AddrPort
	// NodeIP is every Node's InternalIP and every Pod's hostIP. All "nodes" are this machine, reachable
	// in the cluster's namespace on the bridge's address, which is the default (10.244.0.1).
	NodeIP netip.Addr
	// CAPEM is the cluster CA. kube-controller-manager publishes it as the ConfigMap kube-root-ca.crt in
	// every namespace; until that exists in a new namespace, service-account volumes use this instead.
	CAPEM []byte
	// Log receives the agent's own log lines; nil discards them.
	Log io.Writer
	// Timing knobs; zero values take the defaults documented on Timing.
	Timing Timing
}

// Timing holds the agent's intervals.
type Timing struct {
	// LeaseRenewInterval is how often each Node's Lease is renewed (default 10 s, as a kubelet). The
	// Lease lasts four intervals.
	LeaseRenewInterval time.Duration
	// NodeStatusInterval is how often the Node's status is re-posted when nothing changed (default 1 min;
	// the Lease is the liveness signal in between, as with a kubelet).
	NodeStatusInterval time.Duration
	// BackoffStart and BackoffMax bound the delay before restarting a crashed container (default 1 s
	// doubling to 10 s; a real kubelet uses 10 s to 5 min).
	BackoffStart, BackoffMax time.Duration
	// StatusBatch is the least time between two status patches of one Pod (default 100 ms).
	StatusBatch time.Duration
}

func (t *Timing) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.LeaseRenewInterval, 10*time.Second)
	def(&t.NodeStatusInterval, time.Minute)
	def(&t.BackoffStart, time.Second)
	def(&t.BackoffMax, 10*time.Second)
	def(&t.StatusBatch, 100*time.Millisecond)
}

// nodeAllocatable is what every Node offers: generous enough for tests, small enough to look real.
var nodeAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("4"),
	corev1.ResourceMemory: resource.MustParse("8Gi"),
	corev1.ResourcePods:   resource.MustParse("110"),
}

// Agent runs the Nodes. Stop it when done.
type Agent struct {
	opts    Options
	client  kubernetes.Interface
	ctx     context.Context // canceled by Stop
	cancel  context.CancelFunc
	nodes   map[string]*nodeState
	src     objectSource
	logMu   sync.Mutex
	loops   sync.WaitGroup // heartbeat loops and informers
	workers sync.WaitGroup

	mu       sync.Mutex
	pods     map[types.UID]*podWorker
	stopping bool

	stopOnce sync.Once
	stopErr  error
}

// Start registers the Nodes, creates the local-path StorageClass and starts watching Pods. It returns
// once the informers have synced. The agent owns the runtime from here on: Stop closes it, and so does
// a failing Start.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	if err := opts.validate(); err != nil {
		if opts.Runtime != nil { // on failure Start always leaves the runtime closed, as Stop would
			err = errors.Join(err, opts.Runtime.Close())
		}
		return nil, err
	}
	opts.Timing.defaults()
	if !opts.NodeIP.IsValid() {
		opts.NodeIP = netip.MustParseAddr("10.244.0.1")
	}
	actx, cancel := context.WithCancel(context.Background())
	a := &Agent{opts: opts, client: opts.Client, ctx: actx, cancel: cancel, nodes: map[string]*nodeState{},
		src: clientSource{opts.Client}, pods: map[types.UID]*podWorker{}}
	for i, name := range opts.Nodes {
		n, err := a.newNodeState(name, i)
		if err != nil {
			return nil, errors.Join(err, a.Stop())
		}
		a.nodes[name] = n
	}
	if err := a.start(ctx); err != nil {
		return nil, errors.Join(err, a.Stop())
	}
	return a, nil
}

func (o *Options) validate() error {
	switch {
	case o.Client == nil:
		return errors.New("node agent: Options.Client is required")
	case o.Runtime == nil:
		return errors.New("node agent: Options.Runtime is required")
	case o.Images == nil:
		return errors.New("node agent: Options.Images is required (DefaultImageTable)")
	case o.Dial == nil:
		return errors.New("node agent: Options.Dial is required (probes reach pod IPs through it)")
	case o.Dir == "":
		return errors.New("node agent: Options.Dir is required")
	case len(o.Nodes) == 0 || len(o.Nodes) > 254:
		return fmt.Errorf("node agent: need 1 to 254 nodes, got %d", len(o.Nodes))
	case !o.DNS.Server.IsValid() || o.DNS.Domain == "":
		return errors.New("node agent: Options.DNS needs Server and Domain")
	}
	seen := map[string]bool{}
	for _, n := range o.Nodes {
		if n == "" || seen[n] {
			return fmt.Errorf("node agent: node names must be unique and non-empty: %q", o.Nodes)
		}
		seen[n] = true
	}
	return nil
}

// start registers the Nodes, starts their heartbeats, the provisioner and one Pod informer per Node.
func (a *Agent) start(ctx context.Context) error {
	for _, name := range a.opts.Nodes {
		n := a.nodes[name]
		if err := os.MkdirAll(filepath.Join(a.opts.Dir, name, "pods"), 0o755); err != nil {
			return fmt.Errorf("node agent: %w", err)
		}
		if err := a.registerNode(ctx, n); err != nil {
			return err
		}
		a.loops.Go(func() { a.heartbeatLoop(n) })
	}
	if err := a.startProvisioner(ctx); err != nil {
		return err
	}
	var synced []cache.InformerSynced
	for _, name := range a.opts.Nodes {
		factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + name }))
		inf := factory.Core().V1().Pods().Informer()
		n := a.nodes[name]
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { a.podChanged(n, obj, false) },
			UpdateFunc: func(_, obj any) { a.podChanged(n, obj, false) },
			DeleteFunc: func(obj any) { a.podChanged(n, obj, true) },
		}); err != nil {
			return fmt.Errorf("node agent: watch pods of %s: %w", name, err)
		}
		factory.Start(a.ctx.Done())
		a.loops.Go(func() { <-a.ctx.Done(); factory.Shutdown() })
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("node agent: pod informers did not sync")
	}
	return nil
}

// podChanged hands the latest Pod object to its worker, starting one for a Pod seen the first time.
func (a *Agent) podChanged(n *nodeState, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	w := a.pods[pod.UID]
	if w == nil && !deleted && !a.stopping {
		w = newPodWorker(a, n, pod)
		a.pods[pod.UID] = w
		a.workers.Go(w.run)
	}
	a.mu.Unlock()
	if w != nil {
		w.update(pod, deleted)
	}
}

// forget drops a worker that has finished.
func (a *Agent) forget(uid types.UID) {
	a.mu.Lock()
	delete(a.pods, uid)
	a.mu.Unlock()
}

// workersOf returns the live workers of one node (all nodes if name is empty).
func (a *Agent) workersOf(name string) []*podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*podWorker
	for _, w := range a.pods {
		if name == "" || w.node.name == name {
			out = append(out, w)
		}
	}
	return out
}

// Stop kills every Pod's processes (SIGKILL: this is a shutdown, not a deletion), removes the sandboxes,
// stops heartbeats and informers and closes the runtime. Pods and Nodes stay in the API, as they would if
// the machine went away. Safe to call more than once.
func (a *Agent) Stop() error {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.stopping = true
		ws := make([]*podWorker, 0, len(a.pods))
		for _, w := range a.pods {
			ws = append(ws, w)
		}
		a.mu.Unlock()
		for _, w := range ws {
			w.shutdown()
		}
		a.workers.Wait()
		a.cancel()
		a.loops.Wait()
		for _, n := range a.nodes {
			n.broadcaster.Shutdown()
		}
		if a.opts.Runtime != nil {
			a.stopErr = a.opts.Runtime.Close()
		}
	})
	return a.stopErr
}

func (a *Agent) logf(format string, args ...any) {
	if a.opts.Log == nil {
		return
	}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	_, _ = fmt.Fprintf(a.opts.Log, "[node-agent] "+time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}
