package workload

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassifyPutError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want Outcome
	}{
		// Ambiguous: the proposal may be in the log and committed later.
		{context.DeadlineExceeded, Unknown},
		{context.Canceled, Unknown},
		{rpctypes.ErrTimeout, Unknown},
		{rpctypes.ErrTimeoutDueToLeaderFail, Unknown},
		{rpctypes.ErrLeaderChanged, Unknown},
		{rpctypes.ErrNoLeader, Unknown},
		{status.Error(codes.Unavailable, "connection reset"), Unknown},
		{errors.New("something new"), Unknown},
		// Refused before proposing.
		{rpctypes.ErrTooManyRequests, Failed},
		{rpctypes.ErrRequestTooLarge, Failed},
		{rpctypes.ErrNoSpace, Failed},
		{fmt.Errorf("put: %w", rpctypes.ErrTooManyRequests), Failed},
		{status.Error(codes.InvalidArgument, "bad"), Failed},
	} {
		if got := classifyPutError(tt.err); got != tt.want {
			t.Errorf("classifyPutError(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
