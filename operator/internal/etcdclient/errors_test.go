package etcdclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// TestErrorsAreWrapped checks that errors name the operation and target and still match etcd's
// errors and context errors with errors.Is.
func TestErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 1)
	cli := tc.client()
	self := tc.running()[0]
	const missing = 0xdead

	unreachable := "http://" + freeAddr(t) // nothing listens there
	shortCtx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}

	for _, tt := range []struct {
		name   string
		call   func() error
		prefix string
		is     error
	}{
		{"promote missing member", func() error { return cli.Promote(callCtx(t), missing) },
			"promote member dead: ", rpctypes.ErrMemberNotFound},
		{"promote a voter", func() error { return cli.Promote(callCtx(t), self.id) },
			fmt.Sprintf("promote member %x: ", self.id), rpctypes.ErrMemberNotLearner},
		{"remove missing member", func() error { return cli.Remove(callCtx(t), missing) },
			"remove member dead: ", rpctypes.ErrMemberNotFound},
		{"move leader to missing member", func() error { return cli.MoveLeader(callCtx(t), missing) },
			fmt.Sprintf("move leader from %x (%s) to dead: ", self.id, self.clientURL), rpctypes.ErrBadLeaderTransferee},
		{"status of unreachable endpoint", func() error { _, err := cli.Status(shortCtx(), unreachable); return err },
			"status of " + unreachable + ": ", context.DeadlineExceeded},
		{"health of unreachable endpoint", func() error { return cli.Health(shortCtx(), unreachable, false) },
			"health of " + unreachable + " (learner=false): ", context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Errorf("error %q does not start with %q", err, tt.prefix)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
		})
	}

	if _, err := cli.AddLearner(callCtx(t), []string{"not a url"}); err == nil || !strings.HasPrefix(err.Error(), "add learner [not a url]: ") {
		t.Errorf("AddLearner with a bad URL: got %v", err)
	}
	if _, err := etcdclient.New(etcdclient.Config{}); err == nil {
		t.Error("New without endpoints succeeded")
	}
}
