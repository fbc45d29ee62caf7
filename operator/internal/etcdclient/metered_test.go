package etcdclient_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quorumkit/etcd-operator/operator/internal/etcdclient"
)

// TestMeteredCountsEveryCall runs real calls against a real member, one of them failing, and checks the
// counter saw each with its outcome.
func TestMeteredCountsEveryCall(t *testing.T) {
	tc := startCluster(t, 1)
	var m *testMember
	for _, x := range tc.members {
		m = x
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_etcd_requests_total"}, []string{"operation", "outcome"})
	c, err := etcdclient.Metered(etcdclient.New, requests)(etcdclient.Config{Endpoints: []string{m.clientURL}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := c.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx, m.clientURL, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, 12345); err == nil { // no such member
		t.Fatal("removing an unknown member succeeded")
	}
	for _, want := range []struct {
		op, outcome string
	}{{"MemberList", "ok"}, {"Health", "ok"}, {"Remove", "error"}} {
		if got := testutil.ToFloat64(requests.WithLabelValues(want.op, want.outcome)); got != 1 {
			t.Errorf("%s %s counted %v times, want 1", want.op, want.outcome, got)
		}
	}
	if got := testutil.CollectAndCount(requests); got != 3 {
		t.Errorf("%d series, want 3", got)
	}
}
