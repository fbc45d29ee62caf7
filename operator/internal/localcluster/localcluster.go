// Package localcluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with kube-proxy and CoreDNS on this machine without a container
// runtime, entirely inside a network namespace it creates, and removes every trace of it on Stop.
//
// Why a namespace: EndpointSlices reject loopback addresses, so the apiserver (and later the pods) need
// real addresses, and private-range addresses must never appear in the machine's own network namespace.
// The cluster's namespace holds a bridge with 10.244.0.1/16, the apiserver listens on that address and
// etcd on the namespace's loopback. This process reaches the apiserver with a dialer that opens its
// sockets inside the namespace (RESTConfig); tools such as kubectl use Kubeconfig, which points at a
// forwarder on the host's 127.0.0.1. Nothing listens on the machine's other interfaces.
//
// Services work inside the namespace as on a node: kube-proxy (nftables mode) translates ClusterIPs, and
// CoreDNS, reached through the kube-dns Service at DNSServiceIP, answers for ClusterDomain. Pods that
// join the bridge (BridgeName, gateway GatewayIP) get both; this process reaches them with DialContext.
//
// It needs root (to create namespaces) and Linux. The binaries come from Options.BinDir, by default the
// repository's bin directory.
package localcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/node"
	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// Options configure Start. The zero value works from inside the repository.
type Options struct {
	// Dir is where the cluster's working directory (certificates, etcd data, logs, kubeconfigs) is
	// created; Stop removes that directory. Empty means os.TempDir().
	Dir string
	// BinDir holds the binaries (see binaries). Empty means the bin directory at the root of this
	// repository, found by walking up from the working directory.
	BinDir string
	// Log receives the components' output, each line prefixed with the component's name. Nil discards
	// it; the logs are still written to files in the working directory and quoted in errors.
	Log io.Writer
	// Timeout bounds Start as a whole. Zero means two minutes.
	Timeout time.Duration
	// Nodes is how many Nodes (node-1 ... node-N) the node agent registers and runs Pods for. Zero starts
	// no agent: a control plane whose Pods are scheduled but never run.
	Nodes int
}

// Cluster is a running control plane. Stop it when done; a test binary that dies without stopping it
// still leaves nothing running (see Start).
type Cluster struct {
	dir        string
	agent      *node.Agent // nil without Nodes
	ns         *netNS
	fwd        *forwarder
	procs      []*process // in start order
	watchdog   *exec.Cmd
	caPEM      []byte
	adminToken string
	config     *rest.Config
	client     kubernetes.Interface
	kubeconfig string
	timings    Timings

	stopOnce sync.Once
	stopErr  error
}

// Timings record how long each stage of Start took, measured from the moment Start was called.
type Timings struct {
	APIServerReady   time.Duration // /readyz answered ok
	AddonsStarted    time.Duration // kube-proxy and CoreDNS started (their RBAC and Service applied)
	KubeProxyReady   time.Duration // a TLS handshake through the kubernetes Service's ClusterIP succeeded
	CoreDNSReady     time.Duration // CoreDNS, asked directly, resolved kubernetes.default.svc
	ClusterDNSReady  time.Duration // the same answer came through the kube-dns Service's ClusterIP
	ControllersReady time.Duration // the default ServiceAccount exists
	Ready            time.Duration // Start returned
}

// binary is one program the cluster runs, with the command that builds it, for the error when it is
// missing.
type binary struct{ name, build string }

const kubeVersionFlags = `-ldflags "-X k8s.io/component-base/version.gitVersion=v1.35.4 ` +
	`-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"`

var binaries = []binary{
	{"etcd", "scripts/build-tool.sh etcd go.etcd.io/etcd/server/v3 etcd"},
	{"kube-apiserver", "scripts/build-tool.sh kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver " + kubeVersionFlags},
	{"kube-controller-manager", "scripts/build-tool.sh kubernetes k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager " + kubeVersionFlags},
	{"kube-scheduler", "scripts/build-tool.sh kubernetes k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler " + kubeVersionFlags},
	{"kube-proxy", "scripts/build-tool.sh kubernetes k8s.io/kubernetes/cmd/kube-proxy kube-proxy " + kubeVersionFlags},
	{"coredns", "scripts/build-tool.sh coredns github.com/quorumkit/etcd-operator/operator/tools/coredns coredns"},
	{"podinit", "go build -o bin/podinit ./operator/cmd/podinit (or: make cluster-tools)"},
}

// Start creates the namespace, starts the control plane, kube-proxy and CoreDNS in it and returns once
// the apiserver is ready, the controller-manager has created the default ServiceAccount, a connection to
// the kubernetes Service's ClusterIP reaches the apiserver and the cluster DNS answers through its
// ClusterIP. On failure it cleans up and returns an error quoting the end of the failing component's log.
//
// Besides the binaries it needs the nft, ip and sysctl commands: scripts/install-packages.sh installs
// them.
//
// Every component gets SIGKILL if this process dies (Pdeathsig), and a small watchdog process removes
// the namespace and the working directory after this process has gone, should Stop never run.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("localcluster: must run as root: it creates network namespaces (ip netns add)")
	}
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	begin := time.Now()
	c, err := prepare(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := c.boot(ctx, binDir, opts.Log, begin); err != nil {
		return nil, errors.Join(fmt.Errorf("localcluster: %w", err), c.Stop())
	}
	if opts.Nodes > 0 {
		if err := c.startNodes(ctx, binDir, opts.Nodes, opts.Log); err != nil {
			return nil, errors.Join(fmt.Errorf("localcluster: %w", err), c.Stop())
		}
	}
	c.timings.Ready = time.Since(begin)
	return c, nil
}

// prepare creates the working directory, the certificates and the namespace, and starts the watchdog.
func prepare(parent string) (*Cluster, error) {
	dir, err := os.MkdirTemp(parent, "localcluster-")
	if err != nil {
		return nil, fmt.Errorf("localcluster: create working directory: %w", err)
	}
	c := &Cluster{dir: dir, adminToken: randomHex(16)}
	fail := func(err error) (*Cluster, error) {
		return nil, errors.Join(fmt.Errorf("localcluster: %w", err), c.Stop())
	}
	for _, sub := range []string{"pki", "etcd", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return fail(fmt.Errorf("create %s: %w", sub, err))
		}
	}
	if c.caPEM, err = writePKI(filepath.Join(dir, "pki"), apiserverSANs(), c.adminToken); err != nil {
		return fail(fmt.Errorf("create certificates: %w", err))
	}
	if err := writeComponentKubeconfigs(dir); err != nil {
		return fail(err)
	}
	// Unique per run: the pid tells a leftover's origin, the random part avoids reuse after pid wrap.
	name := fmt.Sprintf("localcluster-%d-%s", os.Getpid(), randomHex(3))
	if c.ns, err = createNetNS(name, apiserverIP+podCIDRPrefix); err != nil {
		return fail(fmt.Errorf("create network namespace: %w", err))
	}
	if c.watchdog, err = startWatchdog(c.ns, dir); err != nil {
		return fail(err)
	}
	return c, nil
}

// boot starts the components and waits for each stage to be ready. Everything after the apiserver starts
// only once it is ready: the others would otherwise spend their own start-up timeouts waiting for it.
// kube-proxy and CoreDNS need nothing from the controllers, so they come up while the controllers do.
func (c *Cluster) boot(ctx context.Context, binDir string, log io.Writer, begin time.Time) error {
	start := func(name string, args []string) (*process, error) {
		p, err := startProcess(c.ns, name, filepath.Join(binDir, name),
			filepath.Join(c.dir, "logs", name+".log"), log, args...)
		if err == nil {
			c.procs = append(c.procs, p)
		}
		return p, err
	}
	if _, err := start("etcd", etcdArgs(c.dir)); err != nil {
		return err
	}
	apiserver, err := start("kube-apiserver", apiserverArgs(c.dir))
	if err != nil {
		return err
	}
	if err := c.setupClients(); err != nil {
		return err
	}
	if err := c.waitReadyz(ctx, apiserver); err != nil {
		return err
	}
	c.timings.APIServerReady = time.Since(begin)
	kcm, err := start("kube-controller-manager", controllerManagerArgs(c.dir))
	if err != nil {
		return err
	}
	if _, err := start("kube-scheduler", schedulerArgs(c.dir)); err != nil {
		return err
	}
	if err := c.applyAddonObjects(ctx, apiserver); err != nil {
		return err
	}
	proxy, err := start("kube-proxy", kubeProxyArgs(c.dir))
	if err != nil {
		return err
	}
	dns, err := start("coredns", coreDNSArgs(c.dir))
	if err != nil {
		return err
	}
	c.timings.AddonsStarted = time.Since(begin)
	return c.waitServing(ctx, begin, kcm, proxy, dns)
}

// setupClients builds the in-process client (dialing inside the namespace) and the loopback forwarder
// and kubeconfig for external tools.
func (c *Cluster) setupClients() error {
	c.config = &rest.Config{
		Host:            apiserverURL(),
		BearerToken:     c.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		Dial:            c.ns.dialContext,
		QPS:             100,
		Burst:           200,
	}
	var err error
	if c.client, err = kubernetes.NewForConfig(c.config); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if c.fwd, err = startForwarder(c.ns, strings.TrimPrefix(apiserverURL(), "https://")); err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	return writeKubeconfig(c.kubeconfig, "https://"+c.fwd.addr(), filepath.Join(c.dir, "pki", caCert),
		&clientcmdapi.AuthInfo{Token: c.adminToken})
}

// RESTConfig returns a cluster-admin configuration whose connections are opened inside the cluster's
// namespace. Each call returns a new copy.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// Client returns a cluster-admin client-go clientset built from RESTConfig.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Kubeconfig returns the path of a cluster-admin kubeconfig for tools run in the host namespace, such as
// kubectl. It points at a forwarder on 127.0.0.1 that lives in this process until Stop.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Timings returns how long Start took to reach each stage.
func (c *Cluster) Timings() Timings { return c.timings }

// Dir returns the cluster's working directory (removed by Stop).
func (c *Cluster) Dir() string { return c.dir }

// NetNS returns the name of the cluster's network namespace, as `ip netns` knows it. Namespaces named
// NetNS()+"-<anything>" (pods' namespaces) count as the cluster's: Stop, and the watchdog if this process
// dies, kill what runs in them and delete them.
func (c *Cluster) NetNS() string { return c.ns.name }

// DialContext opens a connection from inside the cluster's network namespace, where the apiserver, pod
// and Service addresses are reachable. It has the signature of net.Dialer.DialContext, so it plugs into
// HTTP transports, gRPC dialers and net.Resolver.
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.ns.dialContext(ctx, network, addr)
}

// Resolver returns a resolver that asks the cluster DNS, through the kube-dns Service's ClusterIP, from
// inside the namespace: it resolves names as a pod does (use fully qualified names; the machine's
// resolv.conf still supplies search domains and options).
func (c *Cluster) Resolver() *net.Resolver {
	return c.resolverAt(net.JoinHostPort(DNSServiceIP, strconv.Itoa(dnsPort)))
}

// CAPEM returns the cluster CA's certificate in PEM: what verifies the apiserver, and what pods find as
// ca.crt next to their ServiceAccount token.
func (c *Cluster) CAPEM() []byte { return bytes.Clone(c.caPEM) }

// Command returns a command that runs name inside the cluster's network namespace (with a private mount
// namespace), where the apiserver is https://10.244.0.1:6443. It is killed if this process dies; Stop
// also kills whatever still runs in the namespace.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd { return c.ns.command(name, args...) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// resolveBinDir checks that every binary is present, so a missing one fails at once with a hint.
func resolveBinDir(dir string) (string, error) {
	if dir == "" {
		root, err := repo.Root()
		if err != nil {
			return "", fmt.Errorf("localcluster: %w; set Options.BinDir", err)
		}
		dir = filepath.Join(root, "bin")
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b.name)); err != nil {
			return "", fmt.Errorf("localcluster: %s not found in %s: build it from the repository's root with: %s",
				b.name, dir, b.build)
		}
	}
	return dir, nil
}
