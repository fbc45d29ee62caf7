package etcdclient

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestWrapfSentinels checks the mapping from etcd's errors, in both forms clientv3 returns them (gRPC
// status and rpctypes.EtcdError), to this package's sentinels.
func TestWrapfSentinels(t *testing.T) {
	for _, tt := range []struct {
		err      error
		sentinel error // nil: no sentinel applies
	}{
		{rpctypes.ErrGRPCLearnerNotReady, ErrLearnerNotReady},
		{rpctypes.ErrMemberLearnerNotReady, ErrLearnerNotReady},
		{rpctypes.ErrUnhealthy, ErrClusterNotReady},
		{rpctypes.ErrMemberNotEnoughStarted, ErrClusterNotReady},
		{rpctypes.ErrTooManyLearners, ErrTooManyLearners},
		{rpctypes.ErrMemberNotFound, nil},
		{errors.New("etcdserver: can only promote a learner member which is in sync with leader, or not"), nil},
	} {
		got := wrapf(tt.err, "op %d", 1)
		if !errors.Is(got, tt.err) {
			t.Errorf("wrapf(%v) = %v, lost the original error", tt.err, got)
		}
		for _, s := range []error{ErrLearnerNotReady, ErrClusterNotReady, ErrTooManyLearners} {
			if want := s == tt.sentinel; errors.Is(got, s) != want { //nolint:errorlint // comparing which sentinel is expected, by identity
				t.Errorf("errors.Is(wrapf(%v), %v) = %t, want %t", tt.err, s, !want, want)
			}
		}
	}
}
