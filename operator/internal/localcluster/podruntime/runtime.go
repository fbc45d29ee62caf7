package podruntime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Runtime creates and tracks the sandboxes of one node. It is safe for concurrent use.
type Runtime struct {
	cfg     Config
	ip      string // path of iproute2's ip
	nsenter string // path of util-linux's nsenter

	mu        sync.Mutex
	sandboxes map[string]*Sandbox // by SandboxSpec.ID
	closed    bool
}

// New checks the tools and the cluster network and returns a Runtime. It needs root: sandboxes are
// network and mount namespaces.
func New(cfg Config) (*Runtime, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("podruntime: must run as root: it creates network and mount namespaces")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("podruntime: %w", err)
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("podruntime: iproute2's ip command is required (apt-get install iproute2): %w", err)
	}
	nsenterPath, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("podruntime: util-linux's nsenter is required (apt-get install util-linux): %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("podruntime: create %s: %w", cfg.Dir, err)
	}
	return &Runtime{cfg: cfg, ip: ipPath, nsenter: nsenterPath, sandboxes: map[string]*Sandbox{}}, nil
}

func (c Config) validate() error {
	if c.ClusterNetNS == "" || c.Bridge == "" || c.Dir == "" {
		return errors.New("Config needs ClusterNetNS, Bridge and Dir")
	}
	if _, err := os.Stat(filepath.Join("/run/netns", c.ClusterNetNS)); err != nil {
		return fmt.Errorf("cluster network namespace %q: %w", c.ClusterNetNS, err)
	}
	if !c.Gateway.Is4() || c.PrefixLen < 8 || c.PrefixLen > 30 {
		return fmt.Errorf("need an IPv4 Gateway and a PrefixLen in [8, 30], got %v/%d", c.Gateway, c.PrefixLen)
	}
	info, err := os.Stat(c.InitBinary)
	if err != nil {
		return fmt.Errorf("podinit binary (build operator/cmd/podinit): %w", err)
	}
	if !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("podinit binary %s is not an executable file", c.InitBinary)
	}
	return nil
}

// PodNetNSPrefix is the prefix of the name of every sandbox's network namespace in a cluster: the cluster
// namespace's name and a dash. Cleanup code that finds the cluster's namespace left behind should also
// delete every namespace (and kill every process in it) whose name starts with this prefix.
func PodNetNSPrefix(clusterNetNS string) string { return clusterNetNS + "-" }

// sandboxNames derives a sandbox's network namespace name and the name of its veth's host end from the
// Pod's ID. The hash keeps the veth name within the kernel's 15 characters and the namespace name free of
// characters ip would reject.
func sandboxNames(clusterNetNS, id string) (hash, netns, veth string) {
	sum := sha256.Sum256([]byte(id))
	hash = hex.EncodeToString(sum[:])[:10]
	return hash, PodNetNSPrefix(clusterNetNS) + "p" + hash, "vp" + hash
}

// CreateSandbox creates the Pod's network namespace and joins it to the cluster bridge. Calling it again
// with the same ID returns the existing sandbox (an error if the IP differs). A namespace of the same
// name that this Runtime does not know, left by a runtime that died, is deleted with its processes first.
func (r *Runtime) CreateSandbox(spec SandboxSpec) (*Sandbox, error) {
	if spec.ID == "" {
		return nil, errors.New("podruntime: SandboxSpec.ID is empty")
	}
	if err := r.checkPodIP(spec.IP); err != nil {
		return nil, fmt.Errorf("podruntime: sandbox %s: %w", spec.ID, err)
	}
	// Held for the whole creation so two calls with one ID cannot both build it; creation takes a few
	// milliseconds.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("podruntime: runtime is closed")
	}
	if s, ok := r.sandboxes[spec.ID]; ok {
		if s.spec.IP != spec.IP {
			return nil, fmt.Errorf("podruntime: sandbox %s exists with IP %v, asked for %v", spec.ID, s.spec.IP, spec.IP)
		}
		return s, nil
	}
	if spec.Hostname == "" {
		spec.Hostname = "pod"
	}
	hash, netns, veth := sandboxNames(r.cfg.ClusterNetNS, spec.ID)
	s := &Sandbox{rt: r, spec: spec, netns: netns, veth: veth, dir: filepath.Join(r.cfg.Dir, hash)}
	if _, err := os.Stat(filepath.Join("/run/netns", netns)); err == nil {
		// Left by a runtime that died or was not closed (a node agent restarted in the same cluster): its
		// processes are orphans of a Pod that is being recreated.
		stale := &Sandbox{rt: r, spec: spec, netns: netns, veth: veth, dir: s.dir}
		if err := stale.teardown(); err != nil {
			return nil, fmt.Errorf("podruntime: sandbox %s: remove the stale one: %w", spec.ID, err)
		}
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("podruntime: sandbox %s: %w", spec.ID, err)
	}
	if err := s.createNetwork(); err != nil {
		return nil, errors.Join(fmt.Errorf("podruntime: sandbox %s: %w", spec.ID, err), s.teardown())
	}
	r.sandboxes[spec.ID] = s
	return s, nil
}

func (r *Runtime) checkPodIP(ip netip.Addr) error {
	pfx := netip.PrefixFrom(r.cfg.Gateway, r.cfg.PrefixLen).Masked()
	if !ip.Is4() || !pfx.Contains(ip) || ip == r.cfg.Gateway || ip == pfx.Addr() {
		return fmt.Errorf("IP %v is not a usable address of %v", ip, pfx)
	}
	return nil
}

// forget drops a deleted sandbox, so its ID can be created again.
func (r *Runtime) forget(s *Sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sandboxes[s.spec.ID] == s {
		delete(r.sandboxes, s.spec.ID)
	}
}

// Close deletes every sandbox, killing their processes. The Runtime cannot be used afterwards.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	all := make([]*Sandbox, 0, len(r.sandboxes))
	for _, s := range r.sandboxes {
		all = append(all, s)
	}
	r.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() { errs[i] = s.Delete() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
