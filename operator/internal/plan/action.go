package plan

import (
	"fmt"
	"time"
)

// Kind is what an Action does.
type Kind string

const (
	// None: the cluster matches the spec (or is paused); nothing to do.
	None Kind = "None"
	// Wait: something must happen first that the operator does not do itself (a Pod starting, a
	// learner catching up, a member recovering). RequeueAfter says when to look again.
	Wait Kind = "Wait"
	// Bootstrap creates the Pods of the initial members, all at once, with a static --initial-cluster.
	Bootstrap Kind = "Bootstrap"
	// CreatePod creates the Pod of a member that is in etcd's list: a learner that has not started yet,
	// or a member whose data survives in its PVC.
	CreatePod Kind = "CreatePod"
	// AddLearner adds a new member to etcd as a learner. Its Pod is created on the next step.
	AddLearner Kind = "AddLearner"
	// Promote makes a learner a voter.
	Promote Kind = "Promote"
	// MoveLeader transfers leadership away from a member before it is removed or restarted.
	MoveLeader Kind = "MoveLeader"
	// RemoveMember removes a member from etcd. Its Pod (and PVC, per policy) go on later steps.
	RemoveMember Kind = "RemoveMember"
	// DeletePod deletes a member's Pod: a Pod of a removed member, a Pod that can never run again, or a
	// Pod whose settings are outdated (Persistent storage recreates it as the same member).
	DeletePod Kind = "DeletePod"
	// DeletePVC deletes the claim of a removed member when the scale-down policy says Delete.
	DeletePVC Kind = "DeletePVC"
	// Upgrade swaps a member's etcd image in place; the container restarts on the same data.
	Upgrade Kind = "Upgrade"
)

// Action is the one step to take now.
type Action struct {
	Kind Kind
	// Member is the member acted on (for Bootstrap, unused).
	Member string
	// MemberID is the etcd ID of Member where relevant.
	MemberID uint64
	// TargetID is the member leadership moves to (MoveLeader).
	TargetID uint64
	// Members are the Pods to create (Bootstrap).
	Members []string
	// InitialCluster names every member of the bootstrap, for --initial-cluster (Bootstrap).
	InitialCluster []string
	// Force deletes a Pod without a grace period (its node is gone).
	Force bool
	// Reason is the Progressing condition reason this step belongs to.
	Reason string
	// Message says in words what happens and why.
	Message string
	// Refused marks a change the spec asks for that the planner will not make now.
	Refused bool
	// RequeueAfter asks to look again after a delay, for waits no watch reports.
	RequeueAfter time.Duration
}

// MembershipChange reports whether the action changes etcd's member list or leadership.
func (a Action) MembershipChange() bool {
	switch a.Kind {
	case AddLearner, Promote, RemoveMember, MoveLeader:
		return true
	}
	return false
}

func (a Action) String() string {
	if a.Member != "" {
		return fmt.Sprintf("%s %s: %s", a.Kind, a.Member, a.Message)
	}
	return fmt.Sprintf("%s: %s", a.Kind, a.Message)
}

// Polling intervals for states no watch reports.
const (
	// PollProgress is used while a step is under way (a Pod starting, a member rejoining).
	PollProgress = 2 * time.Second
	// PollLearner is used while a learner catches up before promotion.
	PollLearner = 1 * time.Second
)

func idle(reason, msg string) Action { return Action{Kind: None, Reason: reason, Message: msg} }

func wait(reason, msg string) Action {
	return Action{Kind: Wait, Reason: reason, Message: msg, RequeueAfter: PollProgress}
}

func refuse(reason, msg string) Action {
	return Action{Kind: Wait, Reason: reason, Message: msg, Refused: true, RequeueAfter: PollProgress}
}
