// Package plan decides the next step for one etcd cluster. It is pure: the controller observes
// Kubernetes and etcd, fills in a Cluster, and Next returns exactly one Action. Nothing here does I/O,
// so every rule is covered by table tests and a fuzz target that checks the safety invariants.
package plan

// PodState is what Kubernetes says about a member's Pod.
type PodState int

const (
	// PodMissing: no Pod object.
	PodMissing PodState = iota
	// PodPending: created, containers not running yet.
	PodPending
	// PodRunning: containers running (not necessarily ready).
	PodRunning
	// PodFailed: terminal phase (Failed or Succeeded); it will never run again.
	PodFailed
	// PodTerminating: deletion in progress.
	PodTerminating
	// PodLost: bound to a node that is not ready or no longer exists.
	PodLost
)

var podStateNames = [...]string{"Missing", "Pending", "Running", "Failed", "Terminating", "Lost"}

func (s PodState) String() string {
	if int(s) < len(podStateNames) {
		return podStateNames[s]
	}
	return "Unknown"
}

// Member joins what etcd and Kubernetes say about one member, matched by name.
type Member struct {
	Name  string
	Index int

	// From etcd's member list and per-member checks.
	InEtcd  bool
	ID      uint64
	Learner bool
	Started bool // the member has run at least once (etcd knows its name)
	Healthy bool // answered a health check this round
	Leader  bool

	// From Kubernetes.
	Pod           PodState
	PodVersion    string // etcd version of the Pod's image
	PodConfigHash string
	HasPVC        bool
}

// Voter is a member of the Raft voting set.
func (m Member) Voter() bool { return m.InEtcd && !m.Learner }

// Cluster is one observation: the desired spec and the members as they are.
type Cluster struct {
	Name       string // the EtcdCluster's name, the prefix of member names
	Size       int    // desired number of voters
	Version    string // desired etcd version
	ConfigHash string // desired hash of settings that need a new Pod
	Persistent bool   // members keep data in PVCs
	// DeletePVCOnScaleDown: a removed member's PVC is deleted (retention policy whenScaled: Delete).
	DeletePVCOnScaleDown bool
	Paused               bool

	// Bootstrapped is true once a cluster has formed (etcd answered a member list, now or before).
	Bootstrapped bool
	// EtcdReachable is true when etcd answered the member list this round.
	EtcdReachable bool
	// InitialMembers are the names in the --initial-cluster of existing bootstrap Pods, if any.
	InitialMembers []string
	// NextIndex is the lowest member index never used in this cluster.
	NextIndex int

	Members []Member // in index order
}
