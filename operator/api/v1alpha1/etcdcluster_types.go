package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EtcdClusterSpec is the cluster the user wants.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.version) || !has(self.version) || self.version == oldSelf.version || !self.version.matches('^[0-9]{1,9}\\\\.[0-9]{1,9}\\\\.[0-9]{1,9}$') || !oldSelf.version.matches('^[0-9]{1,9}\\\\.[0-9]{1,9}\\\\.[0-9]{1,9}$') || (int(self.version.split('.')[0]) == int(oldSelf.version.split('.')[0]) && int(self.version.split('.')[1]) == int(oldSelf.version.split('.')[1]) && int(self.version.split('.')[2]) >= int(oldSelf.version.split('.')[2])) || (int(self.version.split('.')[0]) == int(oldSelf.version.split('.')[0]) && int(self.version.split('.')[1]) == int(oldSelf.version.split('.')[1]) + 1)",message="spec.version: downgrades and minor-version skips are refused; upgrade one minor version at a time (for example 3.5.x to 3.6.y) and never to a lower version"
type EtcdClusterSpec struct {
	// Size is the number of voting members. Odd sizes tolerate the most failures per member:
	// 3 members survive 1 failure, 5 survive 2. Changing it scales the cluster one member at a time.
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 9",message="spec.size must be between 1 and 9; etcd recommends 3, 5 or 7 members"
	// +kubebuilder:default=3
	Size int32 `json:"size"`

	// Version is the etcd version to run, a 3.5.x or 3.6.x semver such as "3.6.7". Changing it rolls the
	// members one at a time, leader last. Downgrades and minor-version skips are refused.
	// +kubebuilder:default="3.6.7"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^3\\\\.(5|6)\\\\.(0|[1-9][0-9]{0,8})$')",message="spec.version must be a supported etcd version 3.5.x or 3.6.x written as MAJOR.MINOR.PATCH without a leading v, for example 3.6.7"
	Version string `json:"version"`

	// Storage says where members keep their data.
	// +kubebuilder:default={kind: Ephemeral}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Pod holds scheduling and resource settings applied to every member Pod.
	// +optional
	Pod PodSettings `json:"pod,omitempty"`

	// Etcd holds etcd server tuning flags.
	// +optional
	Etcd EtcdTuning `json:"etcd,omitempty"`

	// Paused stops every change the operator would make to the cluster; status is still reported.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// StorageKind selects where member data lives.
// +kubebuilder:validation:Enum=Ephemeral;Persistent
type StorageKind string

const (
	// StorageEphemeral keeps data in an emptyDir: it survives container restarts but not the Pod. A
	// member whose Pod is lost is replaced by a fresh member that copies data from the others.
	StorageEphemeral StorageKind = "Ephemeral"
	// StoragePersistent keeps data in one PersistentVolumeClaim per member: a member whose Pod is lost
	// comes back as the same member with its data.
	StoragePersistent StorageKind = "Persistent"
)

// PVCRetention says whether a member's PersistentVolumeClaim is deleted or kept.
// +kubebuilder:validation:Enum=Delete;Retain
type PVCRetention string

const (
	// PVCDelete deletes the claim.
	PVCDelete PVCRetention = "Delete"
	// PVCRetain keeps the claim (and so the volume) for the user to remove.
	PVCRetain PVCRetention = "Retain"
)

// StorageSpec describes member storage. The kind, class and size cannot change after creation.
// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="spec.storage.kind is immutable; to change storage, create a new EtcdCluster and move the data with a backup and restore"
// +kubebuilder:validation:XValidation:rule="self.kind != 'Persistent' || has(self.size)",message="spec.storage.size is required when spec.storage.kind is Persistent, for example size: 8Gi"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="spec.storage.storageClassName is immutable; create a new EtcdCluster to use another class"
// +kubebuilder:validation:XValidation:rule="self.kind != 'Persistent' || !has(oldSelf.size) || !has(self.size) || !isQuantity(string(self.size)) || !isQuantity(string(oldSelf.size)) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) == 0",message="spec.storage.size is immutable for Persistent storage; volume expansion is not supported yet"
// +kubebuilder:validation:XValidation:rule="self.kind != 'Ephemeral' || !has(self.storageClassName)",message="spec.storage.storageClassName applies only to kind Persistent; remove it or set kind: Persistent"
// +kubebuilder:validation:XValidation:rule="self.kind != 'Ephemeral' || !has(self.retentionPolicy)",message="spec.storage.retentionPolicy applies only to kind Persistent; remove it or set kind: Persistent"
type StorageSpec struct {
	// Kind is Ephemeral (an emptyDir per Pod, the default) or Persistent (a PVC per member). Immutable.
	// +kubebuilder:default=Ephemeral
	// +optional
	Kind StorageKind `json:"kind,omitempty"`

	// Size is the PVC request for Persistent storage, or the emptyDir size limit for Ephemeral storage.
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.storage.size must be greater than zero, for example 8Gi"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the StorageClass of member PVCs; empty uses the cluster's default class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// RetentionPolicy says what happens to a member's PVC when the member is removed by a scale-down and
	// when the EtcdCluster is deleted.
	// +optional
	RetentionPolicy *PVCRetentionPolicy `json:"retentionPolicy,omitempty"`
}

// PVCRetentionPolicy mirrors the StatefulSet field of the same purpose.
type PVCRetentionPolicy struct {
	// WhenScaled applies to the PVC of a member removed by a scale-down. Default Delete: a removed
	// member's data can never rejoin the cluster.
	// +kubebuilder:default=Delete
	// +optional
	WhenScaled PVCRetention `json:"whenScaled,omitempty"`
	// WhenDeleted applies to every PVC when the EtcdCluster is deleted. Default Retain, so that deleting
	// the object by mistake does not destroy the data.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted PVCRetention `json:"whenDeleted,omitempty"`
}

// PodSettings are applied to every member Pod. Changing them replaces members one at a time.
type PodSettings struct {
	// Resources of the etcd container. Requests default to 100m CPU and 128Mi memory.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Affinity of member Pods. When unset, members prefer different nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Tolerations of member Pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// NodeSelector of member Pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// TopologySpreadConstraints of member Pods; the operator fills in the label selector when it is empty.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of member Pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Labels added to member Pods. Keys under etcd.quorumkit.dev/ and app.kubernetes.io/ are reserved.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorumkit.dev/') && !k.startsWith('app.kubernetes.io/'))",message="spec.pod.labels must not use the reserved prefixes etcd.quorumkit.dev/ and app.kubernetes.io/; rename the label"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to member Pods. Keys under etcd.quorumkit.dev/ are reserved.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorumkit.dev/'))",message="spec.pod.annotations must not use the reserved prefix etcd.quorumkit.dev/; rename the annotation"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CompactionMode is etcd's --auto-compaction-mode.
// +kubebuilder:validation:Enum=Periodic;Revision
type CompactionMode string

const (
	// CompactionPeriodic keeps the history of the last retention period (a duration such as 1h).
	CompactionPeriodic CompactionMode = "Periodic"
	// CompactionRevision keeps the last retention revisions (an integer).
	CompactionRevision CompactionMode = "Revision"
)

// AutoCompaction configures etcd's automatic history compaction.
// +kubebuilder:validation:XValidation:rule="self.mode != 'Revision' || self.retention.matches('^[1-9][0-9]{0,17}$')",message="spec.etcd.autoCompaction.retention must be a positive integer number of revisions when mode is Revision, for example 10000"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Periodic' || self.retention.matches('^([0-9]{1,5}(\\\\.[0-9]+)?(ms|s|m|h))+$')",message="spec.etcd.autoCompaction.retention must be a duration when mode is Periodic, for example 1h or 30m"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Periodic' || !self.retention.matches('^(0+(\\\\.0+)?(ms|s|m|h))+$')",message="spec.etcd.autoCompaction.retention must be longer than zero; etcd treats zero as compaction off, so to turn compaction off remove spec.etcd.autoCompaction"
type AutoCompaction struct {
	// Mode is Periodic or Revision.
	Mode CompactionMode `json:"mode"`
	// Retention is a duration (Periodic, e.g. "1h") or a revision count (Revision, e.g. "10000").
	// +kubebuilder:validation:MaxLength=32
	Retention string `json:"retention"`
}

// EtcdTuning holds etcd server flags. Unset fields keep etcd's defaults. Changing them replaces members
// one at a time.
// +kubebuilder:validation:XValidation:rule="(has(self.electionTimeoutMillis) ? self.electionTimeoutMillis : 1000) >= 5 * (has(self.heartbeatIntervalMillis) ? self.heartbeatIntervalMillis : 100)",message="spec.etcd.electionTimeoutMillis must be at least 5 times spec.etcd.heartbeatIntervalMillis (etcd's defaults are 1000 and 100)"
type EtcdTuning struct {
	// QuotaBackendBytes is the backend size at which etcd raises a NOSPACE alarm (--quota-backend-bytes).
	// Between 16Mi and 100Gi; etcd's default is 2Gi and it suggests at most 8Gi.
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity('16Mi')) >= 0 && quantity(string(self)).compareTo(quantity('100Gi')) <= 0",message="spec.etcd.quotaBackendBytes must be between 16Mi and 100Gi, for example 8Gi"
	// +optional
	QuotaBackendBytes *resource.Quantity `json:"quotaBackendBytes,omitempty"`
	// AutoCompaction enables automatic compaction of the key history.
	// +optional
	AutoCompaction *AutoCompaction `json:"autoCompaction,omitempty"`
	// SnapshotCount is the number of committed transactions that trigger a snapshot to disk (--snapshot-count).
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 10000000",message="spec.etcd.snapshotCount must be between 1 and 10000000; etcd's default is 10000 (3.6) or 100000 (3.5)"
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
	// HeartbeatIntervalMillis is the Raft heartbeat interval in milliseconds (--heartbeat-interval).
	// +kubebuilder:validation:XValidation:rule="self >= 10 && self <= 5000",message="spec.etcd.heartbeatIntervalMillis must be between 10 and 5000; etcd's default is 100, roughly the round-trip time between members"
	// +optional
	HeartbeatIntervalMillis *int32 `json:"heartbeatIntervalMillis,omitempty"`
	// ElectionTimeoutMillis is the Raft election timeout in milliseconds (--election-timeout); at least
	// five heartbeats and at most 50000.
	// +kubebuilder:validation:XValidation:rule="self >= 50 && self <= 50000",message="spec.etcd.electionTimeoutMillis must be between 50 and 50000; etcd's default is 1000"
	// +optional
	ElectionTimeoutMillis *int32 `json:"electionTimeoutMillis,omitempty"`
}
