package node_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster"
	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/node"
	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// env is one running cluster with the agent on two nodes, shared by the integration tests.
type env struct {
	cluster *localcluster.Cluster
	agent   *node.Agent
	client  kubernetes.Interface
	dir     string // the agent's Dir
}

var nodes = []string{"node-a", "node-b"}

// TestAgent starts a real control plane and the agent with the real pod runtime, then runs real Pods
// (bin/etcd) through it. It needs root and the binaries in bin/; it fails, never skips, without them.
func TestAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("node agent tests must run as root: they create network and mount namespaces")
	}
	e := startEnv(t)
	t.Run("nodes registered", func(t *testing.T) { testNodes(t, e) })
	t.Run("etcd pod becomes ready", func(t *testing.T) { testEtcdPod(t, e) })
	t.Run("crashing container backs off", func(t *testing.T) { testCrashLoop(t, e) })
	t.Run("liveness failure restarts", func(t *testing.T) { testLivenessFailure(t, e) })
	t.Run("image change restarts the container", func(t *testing.T) { testImageChange(t, e) })
	t.Run("unknown image waits with a clear reason", func(t *testing.T) { testUnknownImage(t, e) })
	t.Run("unsupported pod fails with a clear reason", func(t *testing.T) { testUnsupported(t, e) })
	t.Run("persistent volume provisioned", func(t *testing.T) { testPVC(t, e) })
	t.Run("partition and heal", func(t *testing.T) { testPartition(t, e) })
	t.Run("stop and start node", func(t *testing.T) { testStopStartNode(t, e) })
}

func startEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(root, "bin")
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	initBin := filepath.Join(tmp, "podinit")
	build := exec.Command("go", "build", "-tags", "containers_image_openpgp", "-o", initBin,
		"github.com/quorumkit/etcd-operator/operator/cmd/podinit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build podinit: %v\n%s", err, out)
	}
	opts := localcluster.Options{Dir: tmp, BinDir: binDir}
	if os.Getenv("LOCALCLUSTER_LOG") != "" {
		opts.Log = os.Stderr
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	rt, err := podruntime.New(podruntime.Config{ClusterNetNS: c.NetNS(), Bridge: "br0",
		Gateway: netip.MustParseAddr("10.244.0.1"), PrefixLen: 16, Dir: filepath.Join(tmp, "sandboxes"), InitBinary: initBin})
	if err != nil {
		t.Fatal(err)
	}
	images, err := node.DefaultImageTable(binDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	agentDir := filepath.Join(tmp, "agent")
	aopts := node.Options{
		Client: c.Client(), Nodes: nodes, Runtime: rt, Dir: agentDir, Dial: cfg.Dial, Images: images,
		DNS:               node.DNSConfig{Server: netip.MustParseAddr("10.96.0.10"), Domain: "cluster.local"},
		KubernetesService: netip.MustParseAddrPort("10.96.0.1:443"),
		CAPEM:             cfg.CAData,
		Timing:            node.Timing{LeaseRenewInterval: 2 * time.Second, NodeStatusInterval: 20 * time.Second},
	}
	if os.Getenv("NODE_AGENT_LOG") != "" {
		aopts.Log = os.Stderr
	}
	a, err := node.Start(ctx, aopts)
	if err != nil {
		_ = rt.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
	})
	e := &env{cluster: c, agent: a, client: c.Client(), dir: agentDir}
	// The node lifecycle controller lifts the not-ready taint of new Nodes once they report Ready; until
	// then the scheduler places nothing.
	waitFor(t, 60*time.Second, "nodes untainted", func() (bool, string) {
		for _, n := range nodes {
			got, err := e.client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
			if err != nil || len(got.Spec.Taints) > 0 {
				return false, fmt.Sprintf("%s: %v %v", n, err, got.Spec.Taints)
			}
		}
		return true, ""
	})
	return e
}

// waitFor polls cond every 20 ms until it holds or timeout passes; the last message explains a failure.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	begin := time.Now()
	last := ""
	for time.Since(begin) < timeout {
		ok, msg := cond()
		if ok {
			return time.Since(begin)
		}
		last = msg
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
	return 0
}
