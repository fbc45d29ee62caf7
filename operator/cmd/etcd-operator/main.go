// Command etcd-operator runs EtcdCluster controllers. It only wires things together: options, the
// scheme, the manager and the reconciler.
package main

import (
	"fmt"
	"os"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quorumkit/etcd-operator/operator/internal/controller"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-operator:", err)
		os.Exit(1)
	}
}

func run() error {
	opts, err := parseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	crashKinds, err := parseCrashAfter(os.Getenv(crashEnv))
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New())

	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	cacheOpts := cache.Options{ByObject: controller.CacheByObject()}
	if len(opts.namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("find the Kubernetes API (in-cluster config or KUBECONFIG): %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cacheOpts,
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.probeAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "etcd-operator.etcd.quorumkit.dev",
		LeaderElectionNamespace: opts.leaderElectionNS,
		// client-go's defaults are 15 s / 10 s / 2 s; the flag scales all three together.
		LeaseDuration: &opts.leaseDuration,
		RenewDeadline: ptr.To(opts.leaseDuration * 2 / 3),
		RetryPeriod:   ptr.To(opts.leaseDuration * 2 / 15),
		// Release the lease on a clean stop so a new replica takes over at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	objects := desired.DefaultConfig()
	objects.ClusterDomain, objects.ImageRepository = opts.clusterDomain, opts.imageRepository
	r := &controller.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("etcd-operator"),
		Etcd:                    etcdclient.New,
		Objects:                 objects,
		Resync:                  opts.resync,
		MaxConcurrentReconciles: opts.concurrency,
		AfterAction:             crashAfter(crashKinds),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
