// Package e2e_test is the end-to-end suite: the operator runs as a Pod, installed from config/, on the
// local Kubernetes of package localcluster, where Pods are real processes (etcd 3.5 and 3.6 among them)
// with their own addresses, cluster DNS and Service routing by kube-proxy. Each scenario runs faults
// while a client writes and reads through the cluster's client Service, then checks the history for
// linearizability (porcupine), lost writes, and that every member holds the same data (HashKV).
//
// Needs root and the binaries that `make e2e-tools` builds; `make e2e` runs it. Scenarios share one
// local cluster (starting it costs about 10 s) and each uses a namespace of its own.
package e2e_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: must run as root (the local cluster creates network namespaces); run `make e2e` as root")
		return 1
	}
	var log io.Writer
	if os.Getenv("E2E_LOG") != "" {
		log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if env, err = harness.Start(ctx, harness.Options{Nodes: 3, Log: log}); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start the local cluster:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: local cluster ready in %s, operator in %s more (work dir %s)\n",
		env.Started.Cluster.Round(time.Millisecond), env.Started.Operator.Round(time.Millisecond), env.Cluster.Dir())
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stop the local cluster:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
