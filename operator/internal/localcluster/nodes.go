package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/node"
	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// startNodes starts the node agent with n Nodes (node-1 ... node-n) on a pod runtime whose sandboxes join
// the cluster's bridge. Their files live under the cluster's working directory, so Stop (or the
// watchdog) removes them with it.
func (c *Cluster) startNodes(ctx context.Context, binDir string, n int, log io.Writer) error {
	podDir := filepath.Join(c.dir, "pods")
	if err := os.MkdirAll(podDir, 0o755); err != nil { // containers running as non-root traverse it
		return fmt.Errorf("create %s: %w", podDir, err)
	}
	rt, err := podruntime.New(podruntime.Config{
		ClusterNetNS: c.ns.name,
		Bridge:       BridgeName,
		Gateway:      netip.MustParseAddr(GatewayIP),
		PrefixLen:    16,
		Dir:          podDir,
		InitBinary:   filepath.Join(binDir, "podinit"),
	})
	if err != nil {
		return fmt.Errorf("pod runtime: %w", err)
	}
	images, err := node.DefaultImageTable(binDir)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "node-" + strconv.Itoa(i+1)
	}
	c.agent, err = node.Start(ctx, node.Options{
		Client:            c.client,
		Nodes:             names,
		Runtime:           rt,
		Dir:               filepath.Join(c.dir, "nodes"),
		Dial:              c.ns.dialContext,
		Images:            images,
		DNS:               node.DNSConfig{Server: netip.MustParseAddr(DNSServiceIP), Domain: ClusterDomain},
		KubernetesService: netip.AddrPortFrom(netip.MustParseAddr(KubernetesServiceIP), KubernetesServicePort),
		NodeIP:            netip.MustParseAddr(GatewayIP),
		CAPEM:             c.caPEM,
		Log:               log, // the agent prefixes its own lines
		// kube-controller-manager's node monitor grace is 16 s here (see components.go), so a renewal
		// every 2 s keeps a live Node Ready through a slow renewal or two.
		Timing: node.Timing{LeaseRenewInterval: 2 * time.Second},
	})
	if err != nil {
		return fmt.Errorf("node agent: %w", err) // Start closed the runtime
	}
	return nil
}

// Agent returns the node agent, for fault injection (StopNode, Partition, KillContainer, ...). It is nil
// when the cluster was started without Nodes.
func (c *Cluster) Agent() *node.Agent { return c.agent }
