package desired

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

const (
	containerName = "etcd"
	dataVolume    = "data"
	dataMount     = "/var/lib/etcd"
	// dataDir sits one level below the mount: a fresh filesystem's lost+found must not be in etcd's dir.
	dataDir = dataMount + "/data"
	// etcdUser is the non-root user etcd runs as; fsGroup makes the volume writable for it.
	etcdUser = 65532
)

// Member says which member a Pod is for and how it joins.
type Member struct {
	Name string
	// InitialState is "new" for the members of a bootstrap, "existing" for one that joins a running cluster.
	InitialState string
	// InitialCluster is etcd's --initial-cluster: name=peerURL pairs of the members it starts with.
	InitialCluster string
}

// MemberPod is the Pod of one member.
func MemberPod(cluster *etcdv1.EtcdCluster, cfg Config, m Member) *corev1.Pod {
	spec := cluster.Spec
	labels := memberLabels(cluster, m.Name)
	maps.Copy(labels, withoutKeys(spec.Pod.Labels, labels))
	annotations := maps.Clone(spec.Pod.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[etcdv1.AnnotationConfigHash] = ConfigHash(cluster)
	annotations[etcdv1.AnnotationInitialCluster] = m.InitialCluster
	annotations[etcdv1.AnnotationInitialState] = m.InitialState

	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            m.Name,
			Namespace:       cluster.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{ControllerRef(cluster)},
		},
		Spec: corev1.PodSpec{
			Hostname:  m.Name,
			Subdomain: etcdv1.PeerServiceName(cluster.Name),
			// Service links would inject ETCD_* variables for a Service named etcd, which etcd reads as flags.
			EnableServiceLinks:           ptr.To(false),
			AutomountServiceAccountToken: ptr.To(false),
			RestartPolicy:                corev1.RestartPolicyAlways,
			// etcd flushes and leaves the cluster's view cleanly well within this on SIGTERM.
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:        ptr.To(true),
				RunAsUser:           ptr.To[int64](etcdUser),
				RunAsGroup:          ptr.To[int64](etcdUser),
				FSGroup:             ptr.To[int64](etcdUser),
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers:                []corev1.Container{etcdContainer(cluster, cfg, m)},
			Volumes:                   []corev1.Volume{dataVolumeFor(cluster, m.Name)},
			Affinity:                  affinity(cluster),
			Tolerations:               spec.Pod.Tolerations,
			NodeSelector:              spec.Pod.NodeSelector,
			TopologySpreadConstraints: spreadConstraints(cluster),
			PriorityClassName:         spec.Pod.PriorityClassName,
		},
	}
}

func etcdContainer(cluster *etcdv1.EtcdCluster, cfg Config, m Member) corev1.Container {
	return corev1.Container{
		Name:    containerName,
		Image:   cfg.Image(cluster.Spec.Version),
		Command: []string{"/usr/local/bin/etcd"},
		Args:    EtcdArgs(cluster, cfg, m),
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: etcdv1.ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "peer", ContainerPort: etcdv1.PeerPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: etcdv1.MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    resources(cluster.Spec.Pod.Resources),
		VolumeMounts: []corev1.VolumeMount{{Name: dataVolume, MountPath: dataMount}},
		// Serializable health answers without a leader: a member cut off from the others is not killed,
		// and a learner (which refuses linearizable reads) starts up. NOSPACE is reported in status, not
		// punished with restarts. The startup and readiness probes run often because a member joins the
		// client Service only once its Pod is Ready, and the operator waits for that before it touches
		// the next member: their periods add to every bootstrap, replacement and upgrade step. The
		// startup budget stays 5 minutes (a large snapshot to receive); /health is a cheap local call.
		StartupProbe:   healthProbe("/health?serializable=true&exclude=NOSPACE", 1, 300),
		LivenessProbe:  healthProbe("/health?serializable=true&exclude=NOSPACE", 10, 3),
		ReadinessProbe: healthProbe("/health?exclude=NOSPACE", 2, 3),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Privileged:               ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// EtcdArgs are the etcd flags of one member.
func EtcdArgs(cluster *etcdv1.EtcdCluster, cfg Config, m Member) []string {
	dns := cfg.DNS(cluster)
	args := []string{
		"--name=" + m.Name,
		"--data-dir=" + dataDir,
		fmt.Sprintf("--listen-peer-urls=http://0.0.0.0:%d", etcdv1.PeerPort),
		fmt.Sprintf("--listen-client-urls=http://0.0.0.0:%d", etcdv1.ClientPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", etcdv1.MetricsPort),
		"--advertise-client-urls=" + dns.MemberClientURL(m.Name),
		"--initial-advertise-peer-urls=" + dns.PeerURL(m.Name),
		"--initial-cluster=" + m.InitialCluster,
		"--initial-cluster-state=" + m.InitialState,
		// The UID is unique per EtcdCluster object: members of two clusters can never join each other.
		"--initial-cluster-token=" + string(cluster.UID),
	}
	return append(args, tuningArgs(cluster.Spec.Etcd)...)
}

func tuningArgs(t etcdv1.EtcdTuning) []string {
	var args []string
	if t.QuotaBackendBytes != nil {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(t.QuotaBackendBytes.Value(), 10))
	}
	if t.AutoCompaction != nil {
		mode := "periodic"
		if t.AutoCompaction.Mode == etcdv1.CompactionRevision {
			mode = "revision"
		}
		args = append(args, "--auto-compaction-mode="+mode, "--auto-compaction-retention="+t.AutoCompaction.Retention)
	}
	if t.SnapshotCount != nil {
		args = append(args, "--snapshot-count="+strconv.FormatInt(*t.SnapshotCount, 10))
	}
	if t.HeartbeatIntervalMillis != nil {
		args = append(args, "--heartbeat-interval="+strconv.Itoa(int(*t.HeartbeatIntervalMillis)))
	}
	if t.ElectionTimeoutMillis != nil {
		args = append(args, "--election-timeout="+strconv.Itoa(int(*t.ElectionTimeoutMillis)))
	}
	return args
}

func healthProbe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("metrics"), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		TimeoutSeconds:   3,
		FailureThreshold: failures,
	}
}

// resources fills in modest requests when the user gave none, so members are never BestEffort and the
// first to be evicted under memory pressure.
func resources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	if out.Requests == nil {
		out.Requests = corev1.ResourceList{}
	}
	if _, ok := out.Requests[corev1.ResourceCPU]; !ok {
		if _, limited := out.Limits[corev1.ResourceCPU]; !limited {
			out.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
		}
	}
	if _, ok := out.Requests[corev1.ResourceMemory]; !ok {
		if _, limited := out.Limits[corev1.ResourceMemory]; !limited {
			out.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}
	}
	return out
}

func dataVolumeFor(cluster *etcdv1.EtcdCluster, member string) corev1.Volume {
	if cluster.Spec.Storage.Kind == etcdv1.StoragePersistent {
		return corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: member},
		}}
	}
	return corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: cluster.Spec.Storage.Size},
	}}
}

// affinity keeps the user's affinity; without one, members prefer distinct nodes so one node failure
// costs at most one member where the cluster has room.
func affinity(cluster *etcdv1.EtcdCluster) *corev1.Affinity {
	if cluster.Spec.Pod.Affinity != nil {
		return cluster.Spec.Pod.Affinity
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: etcdv1.SelectorLabels(cluster.Name)},
			},
		}},
	}}
}

// spreadConstraints fills in the member selector where the user left it empty, the common case.
func spreadConstraints(cluster *etcdv1.EtcdCluster) []corev1.TopologySpreadConstraint {
	in := cluster.Spec.Pod.TopologySpreadConstraints
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, len(in))
	for i, c := range in {
		c.DeepCopyInto(&out[i])
		if out[i].LabelSelector == nil {
			out[i].LabelSelector = &metav1.LabelSelector{MatchLabels: etcdv1.SelectorLabels(cluster.Name)}
		}
	}
	return out
}

// MemberPVC is the claim holding one member's data (Persistent storage only). It is owned by the cluster
// only when the retention policy deletes claims with the cluster; see PVCOwned.
func MemberPVC(cluster *etcdv1.EtcdCluster, member string) *corev1.PersistentVolumeClaim {
	st := cluster.Spec.Storage
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      member,
			Namespace: cluster.Namespace,
			Labels:    memberLabels(cluster, member),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: st.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{}},
		},
	}
	if st.Size != nil {
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = *st.Size
	}
	if PVCOwned(cluster) {
		pvc.OwnerReferences = []metav1.OwnerReference{ControllerRef(cluster)}
	}
	return pvc
}

// PVCOwned says whether member claims should carry the cluster's owner reference, which makes the
// garbage collector delete them with the cluster.
func PVCOwned(cluster *etcdv1.EtcdCluster) bool {
	p := cluster.Spec.Storage.RetentionPolicy
	return p != nil && p.WhenDeleted == etcdv1.PVCDelete
}

// DeletePVCOnScaleDown says whether a removed member's claim is deleted.
func DeletePVCOnScaleDown(cluster *etcdv1.EtcdCluster) bool {
	p := cluster.Spec.Storage.RetentionPolicy
	return p == nil || p.WhenScaled != etcdv1.PVCRetain
}

func withoutKeys(in, reserved map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if _, taken := reserved[k]; !taken {
			out[k] = v
		}
	}
	return out
}
