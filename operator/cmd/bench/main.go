// Command bench measures the operator on the local Kubernetes (package localcluster) against the physical
// floor measured in the same run: the same etcd binary bootstrapped statically on loopback by hand, with
// no Kubernetes. It prints one table; every figure is the median of -runs runs. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/floor"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

func main() {
	runs := flag.Int("runs", 5, "runs per figure; each figure is the median")
	idle := flag.Int("idle-clusters", 10, "3-member clusters kept idle while the operator's load is measured")
	idleWindow := flag.Duration("idle-window", time.Minute, "how long the idle load is measured")
	verbose := flag.Bool("v", false, "print the local cluster's logs")
	flag.Parse()
	if err := run(*runs, *idle, *idleWindow, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(runs, idle int, idleWindow time.Duration, verbose bool) error {
	if runs < 1 || idle < 1 || idleWindow < 10*time.Second {
		return fmt.Errorf("-runs and -idle-clusters must be at least 1 and -idle-window at least 10s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	root, err := repo.Root()
	if err != nil {
		return err
	}
	var log io.Writer
	if verbose {
		log = os.Stderr
	}
	progress("floor: %d static bootstraps of 3 and of 5 members on loopback (%s)", runs, filepath.Join("bin", "etcd"))
	dir, err := os.MkdirTemp("", "bench-floor-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	var floors [2]floor.Floors
	for i, n := range []int{3, 5} {
		if floors[i], err = floor.Measure(ctx, filepath.Join(root, "bin", "etcd"), n, runs, dir); err != nil {
			return fmt.Errorf("floor for %d members: %w", n, err)
		}
		progress("floor: %s", floors[i])
	}

	progress("starting the local cluster and installing the operator")
	env, err := harness.Start(ctx, harness.Options{Nodes: 3, Log: log})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	b := &bench{env: env, runs: runs}
	if err := b.lifecycle(ctx); err != nil {
		return err
	}
	if err := b.upgrades(ctx); err != nil {
		return err
	}
	if err := b.idleLoad(ctx, idle, idleWindow); err != nil {
		return err
	}
	b.print(os.Stdout, floors)
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
