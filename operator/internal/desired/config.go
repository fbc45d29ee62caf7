// Package desired builds the Kubernetes objects an EtcdCluster should have: member Pods and PVCs, the peer
// and client Services and the PodDisruptionBudget. Every function is pure (spec in, object out) so the
// objects can be checked with golden files and the controller only decides when to apply them.
package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// Config holds operator-wide settings that shape every cluster's objects.
type Config struct {
	// ClusterDomain is the Kubernetes DNS domain, usually cluster.local.
	ClusterDomain string
	// ImageRepository is where etcd images come from; the tag is "v" + spec.version.
	ImageRepository string
}

// DefaultConfig is what the operator uses unless flags say otherwise.
func DefaultConfig() Config {
	return Config{ClusterDomain: "cluster.local", ImageRepository: "quay.io/coreos/etcd"}
}

// Image is the etcd image for a version.
func (c Config) Image(version string) string {
	return fmt.Sprintf("%s:v%s", c.ImageRepository, version)
}

// DNS returns the name helper for one cluster.
func (c Config) DNS(cluster *etcdv1.EtcdCluster) etcdv1.DNS {
	return etcdv1.DNS{Cluster: cluster.Name, Namespace: cluster.Namespace, Domain: c.ClusterDomain}
}

// ConfigHash is a short hash of the spec fields that can only change by giving a member a new Pod: pod
// settings and etcd tuning. The version is left out on purpose: an upgrade swaps the image in place.
func ConfigHash(cluster *etcdv1.EtcdCluster) string {
	b, err := json.Marshal(struct {
		Pod  etcdv1.PodSettings `json:"pod"`
		Etcd etcdv1.EtcdTuning  `json:"etcd"`
	}{cluster.Spec.Pod, cluster.Spec.Etcd})
	if err != nil {
		// These types always marshal; a failure here is a programming error.
		panic(fmt.Sprintf("marshal pod settings: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// memberLabels are the labels of one member's Pod and PVC.
func memberLabels(cluster *etcdv1.EtcdCluster, member string) map[string]string {
	l := commonLabels(cluster)
	l[etcdv1.LabelMember] = member
	l[etcdv1.LabelComponent] = "member"
	return l
}

// commonLabels are on every object of a cluster.
func commonLabels(cluster *etcdv1.EtcdCluster) map[string]string {
	l := etcdv1.SelectorLabels(cluster.Name)
	l[etcdv1.LabelManagedBy] = etcdv1.ManagedBy
	return l
}
