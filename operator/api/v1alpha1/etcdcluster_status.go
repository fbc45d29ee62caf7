package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterStatus is what the operator last observed.
type EtcdClusterStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Available, Progressing and Degraded; reasons are documented in conditions.go.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Members as seen in etcd's member list and each member's status, in name order.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []MemberStatus `json:"members,omitempty"`
	// Replicas is the number of voting members in etcd's member list (the scale subresource reads it).
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyMembers is the number of members that are healthy voters.
	// +optional
	ReadyMembers int32 `json:"readyMembers"`
	// CurrentVersion is the lowest etcd version any member runs: the version the cluster behaves as.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`
	// ClusterID is etcd's cluster ID in hex.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// LeaderID is the member ID of the current leader in hex.
	// +optional
	LeaderID string `json:"leaderID,omitempty"`
	// Selector is the label selector of member Pods, for the scale subresource and autoscalers.
	// +optional
	Selector string `json:"selector,omitempty"`
	// NextMemberIndex is the lowest member index never used: member names are never reused, so a new
	// member can never meet a stale DNS record, Pod or retained PVC of a removed one.
	// +optional
	NextMemberIndex int32 `json:"nextMemberIndex,omitempty"`
	// ClientURL is the address clients use: the client Service.
	// +optional
	ClientURL string `json:"clientURL,omitempty"`
}

// MemberRole is a member's role in Raft.
// +kubebuilder:validation:Enum=Voter;Learner
type MemberRole string

const (
	// RoleVoter votes and counts toward quorum.
	RoleVoter MemberRole = "Voter"
	// RoleLearner replicates the log but neither votes nor counts toward quorum.
	RoleLearner MemberRole = "Learner"
)

// MemberStatus is one member as last observed.
type MemberStatus struct {
	// Name is the member name, equal to its Pod name.
	Name string `json:"name"`
	// ID is etcd's member ID in hex.
	// +optional
	ID string `json:"id,omitempty"`
	// PeerURL is the URL other members reach it on.
	// +optional
	PeerURL string `json:"peerURL,omitempty"`
	// ClientURL is the URL clients reach it on.
	// +optional
	ClientURL string `json:"clientURL,omitempty"`
	// Role is Voter or Learner.
	// +optional
	Role MemberRole `json:"role,omitempty"`
	// Leader is true for the Raft leader.
	// +optional
	Leader bool `json:"leader,omitempty"`
	// Healthy is true when the member answered a health check in the last reconcile.
	// +optional
	Healthy bool `json:"healthy"`
	// Version is the etcd version the member runs.
	// +optional
	Version string `json:"version,omitempty"`
	// DBSizeBytes is the size of the member's backend database.
	// +optional
	DBSizeBytes int64 `json:"dbSizeBytes,omitempty"`
	// Alarms active on the member, such as NOSPACE.
	// +optional
	// +listType=atomic
	Alarms []string `json:"alarms,omitempty"`
}

// EtcdCluster is an etcd cluster run by the operator: one Pod (and optionally one PVC) per member.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=etcd;etcds,categories=all
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leaderID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdClusterSpec `json:"spec"`
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
