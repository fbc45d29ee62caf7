package podruntime

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPodsReachEachOther starts a server in one Pod and reaches it from another Pod (through an exec in
// its container) and from the cluster namespace, and measures sandbox creation and container start.
func TestPodsReachEachOther(t *testing.T) {
	rt, cluster := newRuntime(t)
	begin := time.Now()
	a := createSandbox(t, rt, "uid-a", "10.244.1.1", "pod-a")
	created := time.Since(begin)
	b := createSandbox(t, rt, "uid-b", "10.244.1.2", "pod-b")

	begin = time.Now()
	server := start(t, a, srvContainer(t, "server", "serve", ":8080"))
	started := time.Since(begin)
	client := start(t, b, srvContainer(t, "client", "sleep"))
	t.Logf("sandbox created in %v, container started (exec'd) in %v", created, started)

	// The tracked pid is the container's command itself, not ip or podinit.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", server.Pid()))
	if err != nil || string(cmdline) != "podtestsrv\x00serve\x00:8080\x00" {
		t.Fatalf("pid %d has command line %q (%v), want the container's", server.Pid(), cmdline, err)
	}

	want := "hello from pod-a uid=1000\n"
	var got string
	if err := eventually(5*time.Second, func() error {
		var err error
		got, err = getFromCluster(cluster, "10.244.1.1:8080")
		return err
	}); err != nil || got != want {
		t.Fatalf("from the cluster namespace: got %q (%v), want %q", got, err, want)
	}
	out, code, err := b.Exec(context.Background(), client, []string{"podtestsrv", "get", "10.244.1.1:8080"})
	if err != nil || code != 0 || string(out) != want {
		t.Fatalf("from pod b: got %q, code %d, err %v; want %q", out, code, err, want)
	}

	// An address outside the pod network, such as a Service's, is reached through the gateway: here one
	// the cluster namespace answers itself, as it does for the kubernetes Service's apiserver.
	if out, err := exec.Command("ip", "-n", cluster, "addr", "add", "10.96.0.1/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	srv := exec.Command("ip", "netns", "exec", cluster, srvBin, "serve", "10.96.0.1:7000")
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	if err := eventually(5*time.Second, func() error {
		out, code, err = b.Exec(context.Background(), client, []string{"podtestsrv", "get", "10.96.0.1:7000"})
		if err == nil && code != 0 {
			err = fmt.Errorf("exit code %d: %s", code, out)
		}
		return err
	}); err != nil || !strings.HasPrefix(string(out), "hello from") {
		t.Fatalf("from pod b through the gateway: %q, %v", out, err)
	}
}

// TestSetLinkUp cuts a Pod's link: the Pod becomes unreachable but its process keeps running, and
// restoring the link restores reachability.
func TestSetLinkUp(t *testing.T) {
	rt, cluster := newRuntime(t)
	s := createSandbox(t, rt, "uid-link", "10.244.2.1", "pod-link")
	p := start(t, s, srvContainer(t, "server", "serve", ":8080"))
	reach := func() error { _, err := getFromCluster(cluster, "10.244.2.1:8080"); return err }
	if err := eventually(5*time.Second, reach); err != nil {
		t.Fatalf("server never reachable: %v", err)
	}

	if err := s.SetLinkUp(false); err != nil {
		t.Fatal(err)
	}
	if out, err := getFromCluster(cluster, "10.244.2.1:8080"); err == nil {
		t.Fatalf("reached the Pod with its link down: %q", out)
	}
	select {
	case <-p.Done():
		t.Fatalf("container ended while its link was down: %+v", p.Status())
	default:
	}
	if !alive(p.Pid()) {
		t.Fatalf("container pid %d is gone", p.Pid())
	}

	begin := time.Now()
	if err := s.SetLinkUp(true); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, reach); err != nil {
		t.Fatalf("not reachable after restoring the link: %v", err)
	}
	t.Logf("reachable again %v after restoring the link", time.Since(begin))
}

// TestCreateSandboxChecks covers idempotence and the address checks.
func TestCreateSandboxChecks(t *testing.T) {
	rt, _ := newRuntime(t)
	s1 := createSandbox(t, rt, "uid-same", "10.244.3.1", "same")
	s2, err := rt.CreateSandbox(SandboxSpec{ID: "uid-same", IP: netip.MustParseAddr("10.244.3.1")})
	if err != nil || s1 != s2 {
		t.Fatalf("second CreateSandbox: %p %v, want the first sandbox %p", s2, err, s1)
	}
	// A namespace left by a runtime that died is replaced.
	_, stale, _ := sandboxNames(rt.cfg.ClusterNetNS, "uid-stale")
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if s := createSandbox(t, rt, "uid-stale", "10.244.3.3", "stale"); s.NetNS() != stale {
		t.Fatalf("sandbox in %s, want %s", s.NetNS(), stale)
	}
	for _, tc := range []struct{ id, ip, want string }{
		{"uid-same", "10.244.3.2", "exists with IP"},
		{"uid-out", "10.245.0.1", "not a usable address"},
		{"uid-gw", "10.244.0.1", "not a usable address"},
		{"uid-net", "10.244.0.0", "not a usable address"},
	} {
		_, err := rt.CreateSandbox(SandboxSpec{ID: tc.id, IP: netip.MustParseAddr(tc.ip)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CreateSandbox(%s, %s) = %v, want an error with %q", tc.id, tc.ip, err, tc.want)
		}
	}
}
