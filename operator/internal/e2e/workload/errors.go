package workload

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// definitePutErrors are the errors with which etcd rejects a write before proposing it to raft (or, for
// the space quota, refuses to apply it), so the write certainly had no effect. Everything else is
// ambiguous: a timeout, a lost connection or a leader change can strike after the proposal was
// appended, and the entry may still be committed later. etcd's client already retries a write by itself
// when it knows the request was never sent, so such errors rarely reach us.
var definitePutErrors = []error{
	rpctypes.ErrTooManyRequests, // apply lags commit: checked before proposing
	rpctypes.ErrRequestTooLarge, // checked before proposing
	rpctypes.ErrNoSpace,         // quota exceeded: rejected before proposing, or not applied
	rpctypes.ErrPermissionDenied,
	rpctypes.ErrInvalidAuthToken,
}

// definiteCodes are gRPC codes for requests refused before the server acted on them.
var definiteCodes = []codes.Code{codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated}

// classifyPutError tells whether a failed write may have taken effect (Unknown) or certainly did not.
func classifyPutError(err error) Outcome {
	for _, d := range definitePutErrors {
		if errors.Is(err, d) {
			return Failed
		}
	}
	if s, ok := status.FromError(err); ok {
		for _, c := range definiteCodes {
			if s.Code() == c {
				return Failed
			}
		}
	}
	return Unknown
}
