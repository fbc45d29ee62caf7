// Command demo brings up the local Kubernetes (control plane, kube-proxy, CoreDNS and our node agent,
// which runs Pods as processes), installs the operator from config/ as a Pod, creates the sample 3-member
// cluster, writes and reads a key through its client Service, shows the API refusing bad specs, and
// prints how to use the cluster. `make demo` runs it as root; it keeps the cluster until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
)

func main() {
	keep := flag.Bool("keep", isTerminal(os.Stdin), "keep the cluster running until Ctrl-C (default: when run from a terminal)")
	flag.Parse()
	if err := run(*keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(keep bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("run as root: the local cluster creates network namespaces (sudo make demo)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	step("Starting a local Kubernetes v1.35.4: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, CoreDNS and 3 nodes whose Pods run as processes")
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	env, err := harness.Start(startCtx, harness.Options{Nodes: 3})
	cancel()
	if err != nil {
		return fmt.Errorf("%w\n(build everything first: make cluster-tools)", err)
	}
	defer func() {
		step("Stopping the local cluster")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}()
	fmt.Printf("    cluster ready in %s; operator Deployment (config/default) available %s later\n",
		env.Started.Cluster.Round(time.Millisecond), env.Started.Operator.Round(time.Millisecond))
	if err := walkthrough(ctx, env); err != nil {
		return err
	}
	usage(env)
	if keep {
		fmt.Println("\n    The cluster keeps running until you press Ctrl-C.")
		<-ctx.Done()
	}
	return nil
}

func usage(env *harness.Env) {
	step("Use it")
	fmt.Printf(`    export KUBECONFIG=%s
    bin/kubectl get etcdclusters,pods,svc -n demo -o wide
    bin/kubectl get events -n demo
    bin/kubectl patch etcdcluster example -n demo --type=merge -p '{"spec":{"size":5}}'
    bin/kubectl logs is not available: the node agent serves no kubelet API; logs are in %s
    make test     every test, the end-to-end suite on this local cluster included
    make bench    the benchmark table
`, env.Cluster.Kubeconfig(), env.Cluster.Dir())
}

// isTerminal asks the terminal driver; a character device alone (/dev/null is one) is not a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }
