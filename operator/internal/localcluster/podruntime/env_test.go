package podruntime

import (
	"crypto/rand"
	"encoding/hex"
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

// The test binaries: podinit and the test "image" podtestsrv, built once by TestMain.
var initBin, srvBin string

const (
	srvImagePath = "/usr/local/bin/podtestsrv"
	testUID      = 1000
	testGID      = 1000
)

var gateway = netip.MustParseAddr("10.244.0.1")

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild() // never returns
	}
	if os.Geteuid() != 0 {
		fmt.Println("podruntime tests need root (network and mount namespaces); skipping")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "podruntime-bin-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	initBin, srvBin = filepath.Join(dir, "podinit"), filepath.Join(dir, "podtestsrv")
	// Static (CGO_ENABLED=0): the test image's root holds no libc.
	build := exec.Command("go", "build", "-tags", "containers_image_openpgp", "-o", dir+"/",
		"github.com/quorumkit/etcd-operator/operator/cmd/podinit", "./testdata/podtestsrv")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	code := 1
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Printf("build test binaries: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// newClusterNetNS creates what localcluster's namespace offers pods: a network namespace with bridge br0
// holding the gateway address. Cleanup removes it and any pod namespace left with its prefix.
func newClusterNetNS(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("prtest-%d-%s", os.Getpid(), hex.EncodeToString(b))
	for _, args := range [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "link", "add", "br0", "type", "bridge"},
		{"-n", name, "addr", "add", gateway.String() + "/16", "dev", "br0"},
		{"-n", name, "link", "set", "br0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = exec.Command("ip", "netns", "delete", name).Run()
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if left := removeLeftoverPodNetNS(name); len(left) > 0 {
			t.Errorf("pod namespaces left behind after the test: %v", left)
		}
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("delete %s: %v: %s", name, err, out)
		}
	})
	return name
}

// removeLeftoverPodNetNS does what the cluster's cleanup does after a crash: kill every process in the
// cluster's pod namespaces and delete them. It returns the names it found.
func removeLeftoverPodNetNS(cluster string) []string {
	entries, _ := os.ReadDir("/run/netns")
	var found []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), PodNetNSPrefix(cluster)) {
			continue
		}
		found = append(found, e.Name())
		out, _ := exec.Command("ip", "netns", "pids", e.Name()).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = exec.Command("ip", "netns", "delete", e.Name()).Run()
	}
	return found
}

// newRuntime returns a Runtime on a fresh cluster namespace; cleanup closes it first.
func newRuntime(t *testing.T) (*Runtime, string) {
	t.Helper()
	cluster := newClusterNetNS(t)
	rt, err := New(Config{
		ClusterNetNS: cluster,
		Bridge:       "br0",
		Gateway:      gateway,
		PrefixLen:    16,
		Dir:          filepath.Join(t.TempDir(), "pods"),
		InitBinary:   initBin,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("close runtime: %v", err)
		}
	})
	return rt, cluster
}

func createSandbox(t *testing.T, rt *Runtime, id, ip, hostname string) *Sandbox {
	t.Helper()
	s, err := rt.CreateSandbox(SandboxSpec{ID: id, IP: netip.MustParseAddr(ip), Hostname: hostname})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// srvContainer runs podtestsrv with args as the unprivileged test user, found through PATH as a bare
// name.
func srvContainer(t *testing.T, name string, args ...string) ContainerSpec {
	return ContainerSpec{
		Name:      name,
		Binary:    srvBin,
		ImagePath: srvImagePath,
		Argv:      append([]string{"podtestsrv"}, args...),
		Env:       []string{"PATH=/usr/local/bin"},
		UID:       testUID,
		GID:       testGID,
		LogPath:   filepath.Join(t.TempDir(), name+".log"),
	}
}

func start(t *testing.T, s *Sandbox, c ContainerSpec) *Process {
	t.Helper()
	p, err := s.Start(c)
	if err != nil {
		t.Fatalf("start %s: %v", c.Name, err)
	}
	return p
}

// getFromCluster runs `podtestsrv get target` in the cluster's namespace, where kube-proxy and the
// control plane live, and returns its output.
func getFromCluster(cluster, target string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", cluster, srvBin, "get", target).CombinedOutput()
	return string(out), err
}

// eventually retries check every 50 ms until it succeeds or timeout passes, and returns its last error.
func eventually(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitDone(t *testing.T, p *Process, timeout time.Duration) ExitStatus {
	t.Helper()
	select {
	case <-p.Done():
		return p.Status()
	case <-time.After(timeout):
		t.Fatalf("pid %d still running after %v", p.Pid(), timeout)
		return ExitStatus{}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
