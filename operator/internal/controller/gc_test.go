package controller_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// TestDeletingAClusterCollectsItsObjects runs the real garbage collector (kube-controller-manager) to
// show that deleting an EtcdCluster removes its Pods, Services and PDB through owner references alone
// (the operator needs no finalizer, so its own absence never blocks a delete), keeps PVCs under
// whenDeleted: Retain, and deletes them under whenDeleted: Delete.
func TestDeletingAClusterCollectsItsObjects(t *testing.T) {
	env.RunControllers(t, "garbagecollector", "pvc-protection")
	for _, policy := range []etcdv1.PVCRetention{etcdv1.PVCRetain, etcdv1.PVCDelete} {
		t.Run(string(policy), func(t *testing.T) {
			s := spec3()
			s.Storage = etcdv1.StorageSpec{Kind: etcdv1.StoragePersistent, Size: ptr.To(resource.MustParse("1Gi")),
				RetentionPolicy: &etcdv1.PVCRetentionPolicy{WhenScaled: etcdv1.PVCDelete, WhenDeleted: policy}}
			h := newHarness(t, s)
			h.settle()
			must(t, h.c.Delete(h.ctx, h.cluster()))

			wantPVCs := 3
			if policy == etcdv1.PVCDelete {
				wantPVCs = 0
			}
			deadline := time.Now().Add(45 * time.Second)
			for {
				pods, svcs, pdbs, pvcs := h.countAll()
				if pods == 0 && svcs == 0 && pdbs == 0 && pvcs == wantPVCs {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("after deleting the cluster: %d pods, %d services, %d PDBs, %d PVCs; want 0, 0, 0, %d",
						pods, svcs, pdbs, pvcs, wantPVCs)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

func (h *harness) countAll() (pods, svcs, pdbs, pvcs int) {
	h.t.Helper()
	in := client.InNamespace(h.ns)
	var p corev1.PodList
	var s corev1.ServiceList
	var d policyv1.PodDisruptionBudgetList
	var v corev1.PersistentVolumeClaimList
	must(h.t, h.c.List(h.ctx, &p, in))
	must(h.t, h.c.List(h.ctx, &s, in))
	must(h.t, h.c.List(h.ctx, &d, in))
	must(h.t, h.c.List(h.ctx, &v, in))
	return len(p.Items), len(s.Items), len(d.Items), len(v.Items)
}
