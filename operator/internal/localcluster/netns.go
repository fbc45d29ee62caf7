package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// netNS is a named network namespace created with `ip netns add`, which pins it with a bind mount under
// /run/netns so processes can join it by name (`ip netns exec`) and this process can join it by file
// descriptor (setns) without any process living in it.
type netNS struct {
	name string
	ip   string       // path of the ip command
	mu   sync.RWMutex // guards fd: dials may race with delete
	fd   *os.File
}

// createNetNS adds the namespace and brings up its loopback and a bridge holding gateway (CIDR notation).
// The bridge has no ports yet; its address is a local address of the namespace all the same, which is all
// the control plane needs. Pods will later join it through veth pairs.
//
// Two more settings make the namespace a router for Services, as a node's host network is:
//   - a route for serviceCIDR through the bridge. Traffic that pods send to a ClusterIP arrives on the
//     bridge and is translated by kube-proxy's rules before routing, but a connection opened inside this
//     namespace (by this process, or CoreDNS) needs a route to exist before the rules see its packets.
//   - net.ipv4.ip_forward=1, so translated traffic from one pod reaches another. The setting belongs to
//     the namespace; the machine's own value is never read or changed.
func createNetNS(name, gateway string) (*netNS, error) {
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("iproute2's ip command is required (apt-get install iproute2): %w", err)
	}
	n := &netNS{name: name, ip: ipPath}
	if err := n.run("netns", "add", name); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", gateway, "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
		{"route", "add", serviceCIDR, "dev", bridgeName, "src", apiserverIP},
	} {
		if err := n.run(append([]string{"-n", name}, args...)...); err != nil {
			return nil, errors.Join(err, n.delete())
		}
	}
	if err := n.run("netns", "exec", name, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
		return nil, errors.Join(err, n.delete())
	}
	if n.fd, err = os.Open(filepath.Join("/run/netns", name)); err != nil { // no dial can run yet
		return nil, errors.Join(fmt.Errorf("open network namespace %s: %w", name, err), n.delete())
	}
	return n, nil
}

func (n *netNS) run(args ...string) error {
	out, err := exec.Command(n.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// delete removes the namespace. Its bridge goes with it; the caller must have ended every process in it.
func (n *netNS) delete() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd != nil {
		_ = n.fd.Close()
		n.fd = nil
	}
	if _, err := os.Stat(filepath.Join("/run/netns", n.name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return n.run("netns", "delete", n.name)
}

// command runs name inside the namespace. `ip netns exec` also gives the process a private mount namespace
// (it remounts /sys there), so nothing it mounts is seen by the machine. Pdeathsig kills it if this process
// dies: a crashed test leaves no control plane running. (Pdeathsig is tied to the OS thread that forked;
// Go only ends threads whose goroutine exits while locked, which dialInside does only if it cannot switch
// a thread back to the host namespace.)
func (n *netNS) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(n.ip, append([]string{"netns", "exec", n.name, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// dialContext opens a connection from inside the namespace: the socket is created by an OS thread that
// has joined the namespace, so its packets never touch the host's network stack, and everything after
// socket creation (connect, reads, writes) stays in that namespace whichever thread runs it.
func (n *netNS) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		conn, restored, err := n.dialLocked(ctx, network, addr)
		if restored {
			runtime.UnlockOSThread()
		} // else: exit locked, so Go discards the thread rather than reuse it in the wrong namespace
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// dialLocked must run on a locked OS thread. It reports whether the thread is back in its original
// namespace.
func (n *netNS) dialLocked(ctx context.Context, network, addr string) (net.Conn, bool, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.fd == nil {
		return nil, true, fmt.Errorf("network namespace %s is closed", n.name)
	}
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, fmt.Errorf("open current network namespace: %w", err)
	}
	defer func() { _ = orig.Close() }()
	if err := unix.Setns(int(n.fd.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("enter network namespace %s: %w", n.name, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		err = fmt.Errorf("dial %s inside network namespace %s: %w", addr, n.name, err)
	}
	return conn, unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil, err
}

// forwarder accepts connections on a loopback port of the host namespace and relays each one to target
// inside the cluster's namespace. It exists for tools that cannot take a custom dialer (kubectl); it
// listens on 127.0.0.1 only, so nothing outside this machine can reach it.
type forwarder struct {
	ln     net.Listener
	ns     *netNS
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func startForwarder(ns *netNS, target string) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback for the apiserver forwarder: %w", err)
	}
	f := &forwarder{ln: ln, ns: ns, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

func (f *forwarder) relay(c net.Conn) {
	defer f.wg.Done()
	up, err := f.ns.dialContext(context.Background(), "tcp", f.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !f.track(c, up) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go cp(up, c)
	go cp(c, up)
	<-done // either side finished: close both so the other copy ends too
	f.untrack(c, up)
}

// track registers a relayed pair so close can cut it; it reports false when the forwarder is closing.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

// close stops accepting, cuts every relayed connection (kubectl watches would otherwise hold it open)
// and waits for the relays to end.
func (f *forwarder) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}
