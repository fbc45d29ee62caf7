// Command localcluster runs the local Kubernetes of package localcluster (control plane, kube-proxy,
// CoreDNS and a node agent running Pods as processes) in the foreground until Ctrl-C, and prints how to
// reach it. `make dev-cluster` runs it as root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster"
)

func main() {
	nodes := flag.Int("nodes", 3, "how many Nodes the agent registers")
	verbose := flag.Bool("v", false, "print the components' logs")
	flag.Parse()
	if err := run(*nodes, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, verbose bool) error {
	if nodes < 1 || nodes > 50 {
		return fmt.Errorf("-nodes=%d must be between 1 and 50", nodes)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := localcluster.Options{Nodes: nodes}
	if verbose {
		opts.Log = os.Stderr
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w\n(build everything first: make cluster-tools)", err)
	}
	fmt.Printf(`local cluster ready in %s (%d nodes; working directory %s)
    export KUBECONFIG=%s
    bin/kubectl get nodes,pods -A
Press Ctrl-C to stop it; nothing is left behind.
`, c.Timings().Ready.Round(time.Millisecond), nodes, c.Dir(), c.Kubeconfig())
	<-ctx.Done()
	return c.Stop()
}
