package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/workload"
)

// load is a client writing and reading through a cluster's client Service for the length of a scenario.
type load struct {
	t        *testing.T
	ns, name string
	runner   *workload.Runner
}

// startLoad begins the load through the client Service (kube-proxy picks a member per connection).
func startLoad(t *testing.T, ns, name string) *load {
	t.Helper()
	ctx := context.Background()
	svc, err := env.ServiceEndpoint(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := workload.Start(workload.Config{
		Endpoints:   []string{"http://" + svc},
		DialContext: env.DialContext,
		// A short pause per operation keeps histories to about 10 000 operations a minute, which porcupine
		// checks in seconds (its memory grows with the square of the operations per key), while clients
		// still collide on keys all the time.
		Pause: 20 * time.Millisecond,
		Keys:  16,
	})
	if err != nil {
		t.Fatalf("start the client load: %v", err)
	}
	return &load{t: t, ns: ns, name: name, runner: r}
}

// finish stops the load and checks everything the suite promises: the history is linearizable, no
// acknowledged write was lost, and every member reports the same HashKV at the same revision.
func (l *load) finish() {
	t := l.t
	t.Helper()
	h := l.runner.Stop()
	counts := h.Counts()
	t.Logf("client load: %s", counts)
	for _, e := range h.Errors(5) {
		t.Logf("client error %s", e)
	}
	if counts.Puts.OK == 0 || counts.Gets.OK == 0 {
		t.Errorf("the load made no successful writes or reads (%s): the cluster never served it", counts)
	}
	if err := workload.LostWrites(h); err != nil {
		t.Errorf("lost write: %v", err)
	}
	if err := workload.CheckRevisions(h); err != nil {
		t.Errorf("revisions: %v", err)
	}
	res := workload.Check(h, 2*time.Minute, t.TempDir())
	if err := res.Err(); err != nil {
		t.Errorf("history of %d operations: %v", len(h.Ops), err)
	} else {
		t.Logf("history of %d operations is linearizable (checked in %s)", res.Operations, res.Elapsed.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eps, err := env.MemberEndpoints(ctx, l.ns, l.name)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, ep := range eps {
		urls = append(urls, "http://"+ep)
	}
	agreement, err := workload.CheckHashKV(ctx, urls, env.DialContext)
	if err != nil {
		t.Errorf("members disagree: %v", err)
	} else {
		t.Logf("%d members agree: hash %d at revision %d", agreement.Members, agreement.Hash, agreement.Revision)
	}
}
