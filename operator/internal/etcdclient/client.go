// Package etcdclient is the only package that imports go.etcd.io/etcd/client/v3. It exposes the few
// membership and health operations the operator needs behind the narrow Client interface, so that the
// planner and controller never see gRPC details and controller tests can use a fake.
package etcdclient

import (
	"context"
	"crypto/tls"
	"errors"
)

// ErrLearnerNotReady is returned by Promote while the learner has not caught up with the leader. It is a
// normal waiting state (retry later), not a failure to surface.
var ErrLearnerNotReady = errors.New("learner not ready: it has not caught up with the leader yet")

// Member is one entry of etcd's member list.
type Member struct {
	ID         uint64
	Name       string // empty until the member has started once
	PeerURLs   []string
	ClientURLs []string // empty until the member has started once
	IsLearner  bool
}

// Status is what one member reports about itself (etcd's Maintenance.Status).
type Status struct {
	Endpoint         string
	MemberID         uint64
	ClusterID        uint64
	Leader           uint64 // member ID of the leader this member sees; 0 when none
	Version          string // etcd server version, e.g. "3.6.7"
	DBSize           int64  // bytes allocated by the backend
	DBSizeInUse      int64  // bytes in use
	RaftIndex        uint64
	RaftAppliedIndex uint64
	RaftTerm         uint64
	IsLearner        bool
	Errors           []string // e.g. active alarms such as NOSPACE
}

// Client is the set of etcd operations the operator performs. Implementations must be safe for
// concurrent use. Every call is bounded by the context's deadline.
type Client interface {
	// MemberList returns the cluster's members as the reachable endpoints see them.
	MemberList(ctx context.Context) ([]Member, error)
	// AddLearner adds a non-voting member with the given peer URLs and returns it.
	AddLearner(ctx context.Context, peerURLs []string) (Member, error)
	// Promote makes a learner a voter; ErrLearnerNotReady while it is still catching up.
	Promote(ctx context.Context, id uint64) error
	// Remove removes a member from the cluster.
	Remove(ctx context.Context, id uint64) error
	// MoveLeader transfers leadership to the member with the given ID (it finds the current leader itself).
	MoveLeader(ctx context.Context, to uint64) error
	// Status asks one endpoint (a client URL) for its status.
	Status(ctx context.Context, endpoint string) (Status, error)
	// Health checks that one endpoint serves reads: linearizable for voters, serializable for learners
	// (learners refuse linearizable reads).
	Health(ctx context.Context, endpoint string, learner bool) error
	// Close releases connections.
	Close() error
}

// Config says how to reach a cluster.
type Config struct {
	Endpoints []string    // client URLs
	TLS       *tls.Config // nil for plain HTTP
}

// Factory opens a Client; the controller takes one so tests can substitute a fake.
type Factory func(cfg Config) (Client, error)
