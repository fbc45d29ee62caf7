package etcdclient

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// ErrClusterNotReady is returned by AddLearner, Promote and Remove when etcd's strict reconfiguration
// check refuses the change because it could cost quorum: a voting member is down, has never started, or
// has been connected to the member that handled the request for less than etcd's HealthInterval (5s).
// The last case happens after every start and promotion, so like ErrLearnerNotReady this is a normal
// waiting state: retry later.
var ErrClusterNotReady = errors.New("cluster not ready for a membership change: a voting member is down or connected too recently")

// ErrTooManyLearners is returned by AddLearner when the cluster already has as many learners as etcd
// allows (one by default): the existing learner must be promoted or removed first.
var ErrTooManyLearners = errors.New("too many learner members in cluster")

// etcdSentinels maps etcd server errors (as clientv3 returns them) to this package's sentinels.
var etcdSentinels = []struct {
	etcd     error
	sentinel error
}{
	{rpctypes.ErrGRPCLearnerNotReady, ErrLearnerNotReady},
	{rpctypes.ErrGRPCUnhealthy, ErrClusterNotReady},
	{rpctypes.ErrGRPCMemberNotEnoughStarted, ErrClusterNotReady},
	{rpctypes.ErrGRPCTooManyLearners, ErrTooManyLearners},
}

// isEtcdError reports whether err is the given etcd server error. clientv3 returns server errors
// either as gRPC status errors or converted to rpctypes.EtcdError; both carry the same description,
// so comparing descriptions recognises either form.
func isEtcdError(err, etcdErr error) bool {
	return err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(etcdErr)
}

// wrapf adds context to err, and when err is an etcd error with a sentinel in this package it wraps
// the sentinel too, so callers can use errors.Is(err, ErrLearnerNotReady) and still see etcd's text.
func wrapf(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	for _, s := range etcdSentinels {
		if isEtcdError(err, s.etcd) {
			return fmt.Errorf("%s: %w: %w", msg, s.sentinel, err)
		}
	}
	return fmt.Errorf("%s: %w", msg, err)
}
