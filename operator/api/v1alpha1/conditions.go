package v1alpha1

// Condition types. Every reconcile sets all three, so `kubectl wait --for=condition=Available` works and
// a condition never lingers with a stale reason.
const (
	// ConditionAvailable is True when a quorum of voters is healthy and the cluster serves requests.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is moving the cluster toward the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs attention: unhealthy members, alarms, a refused
	// change, or an unreachable cluster.
	ConditionDegraded = "Degraded"
)

// Reasons for Available.
const (
	// ReasonQuorumHealthy (Available=True): a quorum of voters answers health checks.
	ReasonQuorumHealthy = "QuorumHealthy"
	// ReasonBootstrapping (Available=False, Degraded=False): the initial members are starting: they have
	// not formed a cluster yet, or have but a quorum of them is not yet healthy with Ready Pods. A cluster
	// that was Available once reports QuorumLost instead.
	ReasonBootstrapping = "Bootstrapping"
	// ReasonQuorumLost (Available=False, Degraded=True): fewer than a quorum of voters are healthy (or some
	// members answer but none can serve the member list). The
	// operator makes no membership change; members come back as their Pods recover. If a majority of
	// members lost their data, restore from a backup.
	ReasonQuorumLost = "QuorumLost"
	// ReasonEtcdUnreachable (Available=False, Degraded=True): no member answered at all, for example
	// because no member Pod runs.
	ReasonEtcdUnreachable = "EtcdUnreachable"
)

// Reasons for Progressing.
const (
	// ReasonCreating (True): creating the initial members.
	ReasonCreating = "Creating"
	// ReasonScalingUp (True): adding a member as a learner or promoting it.
	ReasonScalingUp = "ScalingUp"
	// ReasonScalingDown (True): moving leadership or removing a member.
	ReasonScalingDown = "ScalingDown"
	// ReasonReplacingMember (True): recreating or replacing a failed member.
	ReasonReplacingMember = "ReplacingMember"
	// ReasonUpgrading (True): rolling members to spec.version, leader last.
	ReasonUpgrading = "Upgrading"
	// ReasonRollingUpdate (True): replacing members whose Pod settings or tuning differ from the spec.
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonWaiting (True): a change is due but waits for the cluster to become healthy first.
	ReasonWaiting = "WaitingForHealthyCluster"
	// ReasonPaused (False): spec.paused is true; nothing changes.
	ReasonPaused = "Paused"
	// ReasonReconciled (False): the cluster matches the spec.
	ReasonReconciled = "Reconciled"
)

// Reasons for Degraded.
const (
	// ReasonHealthy (False): every member is a healthy voter and no alarm is active.
	ReasonHealthy = "AllMembersHealthy"
	// ReasonMembersUnhealthy (True): at least one member fails its health check or has no running Pod.
	ReasonMembersUnhealthy = "MembersUnhealthy"
	// ReasonAlarmActive (True): a member reports an alarm such as NOSPACE; free space (compact and
	// defragment) or raise spec.etcd.quotaBackendBytes, then disarm the alarm.
	ReasonAlarmActive = "AlarmActive"
	// ReasonActionFailed (True): the last step failed (the message has the error); it is retried with
	// backoff.
	ReasonActionFailed = "ActionFailed"
	// ReasonChangeRefused (True): the spec asks for a change the operator refuses to make; the message
	// says why and what to do.
	ReasonChangeRefused = "ChangeRefused"
)
