// Command demo shows the operator at work on a real kube-apiserver started from bin/: it installs the
// CRD, runs the operator, creates the sample cluster, prints what the operator made and reports, and
// shows the API refusing bad specs. The API server has no nodes, so member Pods are created but never
// run: the local Kubernetes that runs Pods as processes comes with the end-to-end suite.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quorumkit/etcd-operator/operator/internal/controller"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	logf.SetLogger(logr.Discard()) // the walkthrough prints what matters
	step("Starting kube-apiserver v1.35.4 and etcd v3.6.7 from bin/ and installing the EtcdCluster CRD")
	env := &envtest.Environment{
		BinaryAssetsDirectory: filepath.Join(root, "bin"),
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start the API server (run make envtest-tools first): %w", err)
	}
	defer func() { _ = env.Stop() }()

	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: controller.CacheByObject()}})
	if err != nil {
		return err
	}
	r := &controller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcd-operator"),
		Etcd: etcdclient.New, Objects: desired.DefaultConfig(), Resync: 5 * time.Second}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	step("The operator is running (in this process, with the same code as the Deployment)")

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	return walkthrough(ctx, c, root)
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }
