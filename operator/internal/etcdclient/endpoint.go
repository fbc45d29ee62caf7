package etcdclient

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Status asks one member for its status. A member that is down makes this wait until ctx ends
// (clientv3 uses gRPC WaitForReady), so callers should use a short deadline.
func (c *client) Status(ctx context.Context, endpoint string) (Status, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ec, err := c.endpoint(endpoint)
	if err != nil {
		return Status{}, wrapf(err, "status of %s", endpoint)
	}
	resp, err := ec.maintenance.Status(ctx, endpoint)
	if err != nil {
		return Status{}, wrapf(err, "status of %s", endpoint)
	}
	st := Status{
		Endpoint:         endpoint,
		Leader:           resp.Leader,
		Version:          resp.Version,
		DBSize:           resp.DbSize,
		DBSizeInUse:      resp.DbSizeInUse,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		RaftTerm:         resp.RaftTerm,
		IsLearner:        resp.IsLearner,
		Errors:           append([]string(nil), resp.Errors...),
	}
	if resp.Header != nil {
		st.MemberID = resp.Header.MemberId
		st.ClusterID = resp.Header.ClusterId
	}
	return st, nil
}

// Health reads the key "health" from one member, as `etcdctl endpoint health` does. A linearizable
// read proves the member is part of a working quorum; learners refuse those, so for them a
// serializable read (served from the local store) is the best available signal.
func (c *client) Health(ctx context.Context, endpoint string, learner bool) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ec, err := c.endpoint(endpoint)
	if err != nil {
		return wrapf(err, "health of %s", endpoint)
	}
	var opts []clientv3.OpOption
	if learner {
		opts = append(opts, clientv3.WithSerializable())
	}
	_, err = ec.cli.Get(ctx, "health", opts...)
	// With auth enabled the read may be denied; the member still answered, so it is healthy.
	if err == nil || errors.Is(err, rpctypes.ErrPermissionDenied) {
		return nil
	}
	return wrapf(err, "health of %s (learner=%t)", endpoint, learner)
}
