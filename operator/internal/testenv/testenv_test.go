package testenv

import (
	"context"
	"testing"

	etcdv1alpha1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// TestStartServesCRDsAndStopsProcesses starts an environment in a subtest, lists EtcdClusters through it,
// and checks that the subtest's cleanup left no kube-apiserver or etcd child behind.
func TestStartServesCRDsAndStopsProcesses(t *testing.T) {
	before := children()
	t.Run("start", func(t *testing.T) {
		env := Start(t)
		if len(children()) <= len(before) {
			t.Errorf("no kube-apiserver or etcd child process found while the environment runs")
		}
		var list etcdv1alpha1.EtcdClusterList
		if err := env.Client.List(context.Background(), &list); err != nil {
			t.Fatalf("listing EtcdClusters (is the CRD installed?): %v", err)
		}
	})
	for pid := range children() {
		if !before[pid] {
			t.Errorf("process %d (kube-apiserver or etcd) still runs after the test's cleanup", pid)
		}
	}
}
