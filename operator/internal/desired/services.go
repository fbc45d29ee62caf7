package desired

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// PeerService is the headless Service that gives each member a stable DNS name. It publishes members
// that are not ready, because a member that cannot resolve its peers can never become ready.
func PeerService(cluster *etcdv1.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(cluster, etcdv1.PeerServiceName(cluster.Name)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 etcdv1.SelectorLabels(cluster.Name),
			Ports: []corev1.ServicePort{
				port("peer", etcdv1.PeerPort),
				port("client", etcdv1.ClientPort),
				port("metrics", etcdv1.MetricsPort),
			},
		},
	}
}

// ClientService is the Service applications connect to. Only ready members back it; learners are never
// ready (they refuse linearizable reads), so clients never reach one.
func ClientService(cluster *etcdv1.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(cluster, etcdv1.ClientServiceName(cluster.Name)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: etcdv1.SelectorLabels(cluster.Name),
			Ports:    []corev1.ServicePort{port("client", etcdv1.ClientPort)},
		},
	}
}

// PodDisruptionBudget lets voluntary disruptions (drains, evictions) take down only as many members as
// the cluster can lose and keep quorum: (size-1)/2. A one- or two-member cluster tolerates none.
func PodDisruptionBudget(cluster *etcdv1.EtcdCluster) *policyv1.PodDisruptionBudget {
	maxUnavailable := intstr.FromInt32((cluster.Spec.Size - 1) / 2)
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: ownedMeta(cluster, etcdv1.PDBName(cluster.Name)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: etcdv1.SelectorLabels(cluster.Name)},
		},
	}
}

func port(name string, number int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: number, TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
}

// ownedMeta names an object of the cluster and makes the cluster its controller, so deleting the
// EtcdCluster garbage-collects it.
func ownedMeta(cluster *etcdv1.EtcdCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       cluster.Namespace,
		Labels:          commonLabels(cluster),
		OwnerReferences: []metav1.OwnerReference{ControllerRef(cluster)},
	}
}

// ControllerRef is the owner reference every object of a cluster carries.
func ControllerRef(cluster *etcdv1.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(cluster, etcdv1.GroupVersion.WithKind("EtcdCluster"))
}
