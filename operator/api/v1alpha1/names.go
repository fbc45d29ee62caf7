package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
)

// Labels and annotations the operator puts on the objects it owns.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelCluster   = "etcd.quorumkit.dev/cluster"
	LabelMember    = "etcd.quorumkit.dev/member"

	// AnnotationConfigHash on a member Pod is the hash of the settings that need a new Pod to change.
	AnnotationConfigHash = "etcd.quorumkit.dev/config-hash"
	// AnnotationInitialCluster on a member Pod is the --initial-cluster it was started with; the planner
	// reads it to finish a bootstrap that a crash interrupted.
	AnnotationInitialCluster = "etcd.quorumkit.dev/initial-cluster"
	// AnnotationInitialState on a member Pod is "new" for a bootstrap member, "existing" for one that joined.
	AnnotationInitialState = "etcd.quorumkit.dev/initial-cluster-state"

	// ManagedBy is the value of app.kubernetes.io/managed-by.
	ManagedBy = "etcd-operator"

	// ClientPort, PeerPort and MetricsPort are the ports every member listens on.
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
)

// MemberName is the name of member n: also its Pod's and PVC's name.
func MemberName(cluster string, n int) string { return fmt.Sprintf("%s-%d", cluster, n) }

// MemberIndex parses n back out of a member name of this cluster; ok is false for foreign names.
func MemberIndex(cluster, name string) (n int, ok bool) {
	rest, found := strings.CutPrefix(name, cluster+"-")
	if !found || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// PeerServiceName is the headless Service that gives members stable DNS names.
func PeerServiceName(cluster string) string { return cluster + "-peer" }

// ClientServiceName is the Service clients connect to.
func ClientServiceName(cluster string) string { return cluster }

// PDBName is the PodDisruptionBudget that keeps quorum during voluntary disruptions.
func PDBName(cluster string) string { return cluster }

// DNS names members and clients use. domain is the Kubernetes cluster domain, usually cluster.local;
// names are fully qualified so they resolve the same with any resolver search path.
type DNS struct {
	Cluster   string
	Namespace string
	Domain    string
}

// MemberHost is a member's stable DNS name through the headless peer Service.
func (d DNS) MemberHost(member string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", member, PeerServiceName(d.Cluster), d.Namespace, d.Domain)
}

// PeerURL is the URL other members use to reach a member.
func (d DNS) PeerURL(member string) string {
	return fmt.Sprintf("http://%s:%d", d.MemberHost(member), PeerPort)
}

// MemberClientURL is the URL the operator uses to reach one member.
func (d DNS) MemberClientURL(member string) string {
	return fmt.Sprintf("http://%s:%d", d.MemberHost(member), ClientPort)
}

// ClientURL is the URL applications use: the client Service.
func (d DNS) ClientURL() string {
	return fmt.Sprintf("http://%s.%s.svc.%s:%d", ClientServiceName(d.Cluster), d.Namespace, d.Domain, ClientPort)
}

// SelectorLabels select the member Pods of one cluster.
func SelectorLabels(cluster string) map[string]string {
	return map[string]string{LabelName: "etcd", LabelInstance: cluster, LabelCluster: cluster}
}
