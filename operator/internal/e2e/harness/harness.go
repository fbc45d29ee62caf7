// Package harness brings up the local Kubernetes (package localcluster) with its node agent, installs the
// operator on it from config/ as a Pod, and offers what the end-to-end suite, the benchmarks and the demo
// need to drive EtcdClusters and reach their members from inside the cluster's network.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorumkit/etcd-operator/operator/internal/controller"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
	"github.com/quorumkit/etcd-operator/operator/internal/localcluster"
	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// Options configure Start.
type Options struct {
	// Nodes is how many Nodes the agent registers (default 3, so one member per node for 3 members).
	Nodes int
	// Log receives the control plane's and the agent's output; nil discards it (files remain in Dir).
	Log io.Writer
	// Operator adjusts the operator's objects before they are applied (nil: as config/ has them).
	Operator func(*unstructured.Unstructured)
}

// Env is a running local cluster with the operator installed.
type Env struct {
	Cluster *localcluster.Cluster
	Client  client.Client
	Root    string
	// Started records how long each stage of Start took.
	Started StartTimings
}

// StartTimings break Start down.
type StartTimings struct {
	Cluster  time.Duration // control plane, kube-proxy, DNS and nodes ready
	Operator time.Duration // operator Deployment available
}

// Start builds nothing: bin/etcd-operator and the tools must exist (make e2e-tools). It starts the local
// cluster, installs the operator and waits until its Pod is ready.
func Start(ctx context.Context, opts Options) (*Env, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "etcd-operator")); err != nil {
		return nil, fmt.Errorf("harness: bin/etcd-operator is missing: run `make build` first (the local image table maps the operator image to it)")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	begin := time.Now()
	cluster, err := localcluster.Start(ctx, localcluster.Options{Nodes: opts.Nodes, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	env := &Env{Cluster: cluster, Root: root}
	env.Started.Cluster = time.Since(begin)
	scheme, err := controller.NewScheme()
	if err == nil {
		err = apiextensionsv1.AddToScheme(scheme) // to wait for the CRD to be established
	}
	if err != nil {
		return nil, errors.Join(err, cluster.Stop())
	}
	if env.Client, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return nil, errors.Join(fmt.Errorf("harness: client: %w", err), cluster.Stop())
	}
	if err := env.InstallOperator(ctx, opts.Operator); err != nil {
		return nil, errors.Join(err, cluster.Stop())
	}
	env.Started.Operator = time.Since(begin) - env.Started.Cluster
	return env, nil
}

// InstallOperator (re)applies config/default with mutate and waits for the rollout.
func (e *Env) InstallOperator(ctx context.Context, mutate func(*unstructured.Unstructured)) error {
	return deploy.Operator(ctx, e.Client, e.Root, mutate)
}

// Stop tears everything down.
func (e *Env) Stop() error { return e.Cluster.Stop() }

// DialContext opens connections inside the cluster's network, where pod and Service addresses live.
func (e *Env) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return e.Cluster.DialContext(ctx, network, addr)
}

// EnsureNamespace creates a namespace if it does not exist.
func (e *Env) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
