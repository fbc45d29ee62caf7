package podruntime

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeleteLeavesNothing: after Delete no process, namespace, veth, mount or directory of the sandbox
// is left, the volume's contents are untouched, and the ID can be used again.
func TestDeleteLeavesNothing(t *testing.T) {
	rt, cluster := newRuntime(t)
	s := createSandbox(t, rt, "uid-del", "10.244.9.1", "pod-del")
	volume := t.TempDir()
	if err := os.WriteFile(filepath.Join(volume, "keep"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := srvContainer(t, "main", "serve", ":8080")
	c.UID, c.GID = 0, 0
	c.Mounts = []Mount{{HostPath: volume, ContainerPath: "/data"}}
	p := start(t, s, c)
	// An exec still running when Delete comes: Delete must end it too.
	execDone := make(chan error, 1)
	go func() {
		_, _, err := s.Exec(context.Background(), p, []string{"podtestsrv", "sleep"})
		execDone <- err
	}()
	var pids []string
	if err := eventually(5*time.Second, func() error {
		var err error
		pids, err = rt.netnsPIDs(s.netns)
		if err == nil && len(pids) < 2 {
			err = fmt.Errorf("processes in the sandbox: %v", pids)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Delete took %v", time.Since(begin))
	for _, pid := range pids {
		if n, _ := strconv.Atoi(pid); alive(n) {
			t.Errorf("pid %s survived Delete", pid)
		}
	}
	select {
	case <-execDone:
	case <-time.After(5 * time.Second):
		t.Error("Exec did not return after Delete")
	}
	if _, err := os.Stat(filepath.Join("/run/netns", s.netns)); !os.IsNotExist(err) {
		t.Errorf("network namespace %s left: %v", s.netns, err)
	}
	if out, err := exec.Command("ip", "-n", cluster, "link", "show", s.veth).CombinedOutput(); err == nil {
		t.Errorf("veth %s left: %s", s.veth, out)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("sandbox directory %s left: %v", s.dir, err)
	}
	if m := mountsUnder(rt.cfg.Dir); len(m) > 0 {
		t.Errorf("mounts left: %v", m)
	}
	if data, err := os.ReadFile(filepath.Join(volume, "keep")); err != nil || string(data) != "precious" {
		t.Errorf("volume content after Delete: %q, %v", data, err)
	}
	if err := s.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := s.Start(c); err == nil {
		t.Error("Start in a deleted sandbox succeeded")
	}
	again := createSandbox(t, rt, "uid-del", "10.244.9.1", "pod-del")
	if again == s {
		t.Error("CreateSandbox returned the deleted sandbox")
	}
}

// The crash test runs this test binary again as a child that starts a container and kills itself.
const crashChildEnv = "PODRUNTIME_CRASH_CHILD"

// TestParentCrashKillsContainer: when the process that started a container dies without cleaning up,
// the container dies with it, although podinit changed its credentials (which clears the parent-death
// signal the runtime set). The namespace left behind is found by its prefix, as the cluster's cleanup does.
func TestParentCrashKillsContainer(t *testing.T) {
	cluster := newClusterNetNS(t)
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), crashChildEnv+"=1", "CRASH_CLUSTER="+cluster,
		"CRASH_DIR="+t.TempDir(), "CRASH_INIT="+initBin, "CRASH_SRV="+srvBin)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	err = child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v (said %q)", err, line)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid="))
	if err != nil {
		t.Fatalf("child did not report its container: %q", line)
	}
	if err := eventually(3*time.Second, func() error {
		if alive(pid) {
			return fmt.Errorf("container pid %d still alive after its parent died", pid)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left := removeLeftoverPodNetNS(cluster); len(left) != 1 {
		t.Errorf("leftover pod namespaces found by prefix: %v, want the crashed child's one", left)
	}
}

// crashChild runs in the child process: it starts a container as an unprivileged user, reports its
// pid and dies by SIGKILL, so no deferred cleanup runs.
func crashChild() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(1)
	}
	rt, err := New(Config{
		ClusterNetNS: os.Getenv("CRASH_CLUSTER"), Bridge: "br0", Gateway: gateway, PrefixLen: 16,
		Dir: os.Getenv("CRASH_DIR"), InitBinary: os.Getenv("CRASH_INIT"),
	})
	if err != nil {
		fail(err)
	}
	s, err := rt.CreateSandbox(SandboxSpec{ID: "uid-crash", IP: netip.MustParseAddr("10.244.10.1")})
	if err != nil {
		fail(err)
	}
	p, err := s.Start(ContainerSpec{
		Name: "main", Binary: os.Getenv("CRASH_SRV"), ImagePath: srvImagePath,
		Argv: []string{srvImagePath, "sleep"}, UID: testUID, GID: testGID,
		LogPath: filepath.Join(os.Getenv("CRASH_DIR"), "main.log"),
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("pid=%d\n", p.Pid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestTimings measures, over several Pods, how long a sandbox takes to create, a container to start
// (fork to exec of its command) and a sandbox with its container to delete.
func TestTimings(t *testing.T) {
	rt, _ := newRuntime(t)
	const n = 10
	var create, run, del []time.Duration
	sandboxes := make([]*Sandbox, n)
	for i := range n {
		begin := time.Now()
		sandboxes[i] = createSandbox(t, rt, fmt.Sprintf("uid-time-%d", i), fmt.Sprintf("10.244.12.%d", i+1), "t")
		create = append(create, time.Since(begin))
		begin = time.Now()
		start(t, sandboxes[i], srvContainer(t, "main", "sleep"))
		run = append(run, time.Since(begin))
	}
	for _, s := range sandboxes {
		begin := time.Now()
		if err := s.Delete(); err != nil {
			t.Fatal(err)
		}
		del = append(del, time.Since(begin))
	}
	stats := func(ds []time.Duration) string {
		var sum, maxD time.Duration
		for _, d := range ds {
			sum += d
			maxD = max(maxD, d)
		}
		return fmt.Sprintf("mean %v max %v", (sum / time.Duration(len(ds))).Round(time.Microsecond), maxD.Round(time.Microsecond))
	}
	t.Logf("%d pods: create sandbox %s; start container %s; delete sandbox %s", n, stats(create), stats(run), stats(del))
}
