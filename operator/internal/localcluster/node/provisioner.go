package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	// StorageClassName is the default StorageClass the agent creates.
	StorageClassName = "local-path"
	// Provisioner is the provisioner name of that class, and what the agent's PersistentVolumes are
	// annotated with.
	Provisioner = "localcluster.quorumkit.dev/local-path"

	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
	// provisionerResync re-offers every claim and volume, so a failed create or delete is retried.
	provisionerResync = 10 * time.Second
)

// startProvisioner creates the local-path StorageClass and provisions volumes for its claims: when the
// scheduler has picked one of our nodes for a Pod using a claim (WaitForFirstConsumer), a directory under
// Dir/<node>/pv/<name> becomes a local PersistentVolume pinned to that node and pre-bound to the claim;
// kube-controller-manager completes the binding. A Released volume with reclaim policy Delete loses its
// directory and object.
func (a *Agent) startProvisioner(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{annDefaultClass: "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if _, err := a.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("node agent: create StorageClass %s: %w", StorageClassName, err)
	}
	factory := informers.NewSharedInformerFactory(a.client, provisionerResync)
	pvcs := factory.Core().V1().PersistentVolumeClaims().Informer()
	pvs := factory.Core().V1().PersistentVolumes().Informer()
	classes := factory.Storage().V1().StorageClasses().Lister()
	onClaim := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			a.provision(pvc, classes.Get)
		}
	}
	onVolume := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok {
			a.reclaim(pv)
		}
	}
	if _, err := pvcs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim,
		UpdateFunc: func(_, o any) { onClaim(o) }}); err != nil {
		return err
	}
	if _, err := pvs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onVolume,
		UpdateFunc: func(_, o any) { onVolume(o) }}); err != nil {
		return err
	}
	factory.Start(a.ctx.Done())
	a.loops.Go(func() { <-a.ctx.Done(); factory.Shutdown() })
	return nil
}

// provision creates the volume of a claim of our class whose Pod was scheduled to one of our nodes.
func (a *Agent) provision(pvc *corev1.PersistentVolumeClaim, class func(string) (*storagev1.StorageClass, error)) {
	node := a.nodes[pvc.Annotations[annSelectedNode]]
	if node == nil || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil || pvc.DeletionTimestamp != nil {
		return
	}
	sc, err := class(*pvc.Spec.StorageClassName)
	if err != nil || sc.Provisioner != Provisioner {
		return
	}
	name := "pvc-" + string(pvc.UID)
	dir := filepath.Join(a.opts.Dir, node.name, "pv", name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		a.logf("provision %s/%s: %v", pvc.Namespace, pvc.Name, err)
		return
	}
	_ = os.Chmod(dir, 0o777) // any uid may write, as with rancher's local-path; fsGroup narrows it per Pod
	policy := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		policy = *sc.ReclaimPolicy
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              sc.Name,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname,
					Operator: corev1.NodeSelectorOpIn, Values: []string{node.name}}},
			}}}},
		},
	}
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	_, err = a.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.logf("provisioned %s for claim %s/%s on %s", name, pvc.Namespace, pvc.Name, node.name)
	case !apierrors.IsAlreadyExists(err):
		a.logf("provision %s/%s: %v", pvc.Namespace, pvc.Name, err)
	}
}

// reclaim deletes a Released volume of ours with reclaim policy Delete, directory first.
func (a *Agent) reclaim(pv *corev1.PersistentVolume) {
	if pv.Annotations[annProvisionedBy] != Provisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.Local == nil {
		return
	}
	dir := pv.Spec.Local.Path
	// Only ever remove a directory this agent made: Dir/<one of our nodes>/pv/<name>.
	if !slices.ContainsFunc(a.opts.Nodes, func(n string) bool { return dir == filepath.Join(a.opts.Dir, n, "pv", pv.Name) }) {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		a.logf("reclaim %s: %v", pv.Name, err)
		return
	}
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	err := a.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		a.logf("reclaim %s: %v", pv.Name, err)
		return
	}
	a.logf("deleted released volume %s", pv.Name)
}
