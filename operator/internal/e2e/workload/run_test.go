package workload_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/workload"
)

const checkTimeout = time.Minute

// verify runs every history check and fails the test on any finding.
func verify(t *testing.T, h *workload.History) {
	t.Helper()
	res := workload.Check(h, checkTimeout, t.TempDir())
	t.Logf("%s; porcupine checked %d operations in %s", h.Counts(), res.Operations, res.Elapsed.Round(time.Millisecond))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	if err := workload.CheckRevisions(h); err != nil {
		t.Error(err)
	}
	if err := workload.LostWrites(h); err != nil {
		t.Error(err)
	}
}

// load starts the workload on c through a counting dialer and returns a function that stops it.
func load(t *testing.T, c *cluster) (*workload.Runner, *countingDialer) {
	t.Helper()
	d := &countingDialer{}
	r, err := workload.Start(workload.Config{Endpoints: c.endpoints(), DialContext: d.dial})
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

func TestHealthyClusterHistoryChecksOut(t *testing.T) {
	c := startCluster(t, 3)
	r, d := load(t, c)
	// Enough operations to collide on keys; a busy machine just takes longer to get there.
	deadline := time.Now().Add(30 * time.Second)
	for p := r.Progress(); (p.Puts.OK < 100 || p.Gets.OK < 100) && time.Now().Before(deadline); p = r.Progress() {
		time.Sleep(50 * time.Millisecond)
	}
	h := r.Stop()

	counts := h.Counts()
	if counts.Puts.OK < 100 || counts.Gets.OK < 100 {
		t.Errorf("fewer than 100 writes and 100 reads succeeded in 30 s on a healthy cluster: %s", counts)
	}
	// A busy 2-core machine may stall an fsync past the 1s timeout now and then; more is a bug.
	if failed := counts.Puts.Unknown + counts.Puts.Failed + counts.Gets.Failed; failed*50 > len(h.Ops) {
		t.Errorf("more than 2%% of operations failed on a healthy cluster: %s", counts)
	}
	if d.dials.Load() == 0 {
		t.Error("the workload never used the dialer it was given")
	}
	finals := 0
	for _, op := range h.Ops {
		if op.Final && op.Outcome == workload.OK {
			finals++
		}
	}
	if finals != len(h.Keys) {
		t.Errorf("%d successful final reads, want one per key (%d)", finals, len(h.Keys))
	}
	verify(t, h)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agreed, err := workload.CheckHashKV(ctx, c.endpoints(), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, op := range h.Ops {
		last = max(last, op.Revision)
	}
	if agreed.Members != 3 || agreed.Revision < last || agreed.Hash == 0 {
		t.Errorf("HashKV agreement %+v, want 3 members at revision >= %d with a hash", agreed, last)
	}

	// The same real history, with one key's final read made to return an older acknowledged value,
	// must fail every check that looks at it: the checks can fail on real data, not only on toy histories.
	tampered := staleFinalRead(t, h)
	if res := workload.Check(tampered, checkTimeout, ""); res.Verdict != porcupine.Illegal {
		t.Errorf("tampered history: verdict %s, want Illegal", res.Verdict)
	}
	if err := workload.LostWrites(tampered); err == nil || !strings.Contains(err.Error(), "lost write") {
		t.Errorf("tampered history: LostWrites = %v, want a lost write", err)
	}
	if err := workload.CheckRevisions(tampered); err == nil {
		t.Error("tampered history: CheckRevisions found nothing")
	}
}

// staleFinalRead copies h and makes the final read of a key with two acknowledged writes return the
// first of them.
func staleFinalRead(t *testing.T, h *workload.History) *workload.History {
	t.Helper()
	acked := map[string][]workload.Op{}
	for _, op := range h.Ops {
		if op.Kind == workload.Put && op.Outcome == workload.OK {
			acked[op.Key] = append(acked[op.Key], op)
		}
	}
	out := &workload.History{Start: h.Start, Keys: h.Keys, Ops: append([]workload.Op(nil), h.Ops...)}
	for i, op := range out.Ops {
		if !op.Final || op.Outcome != workload.OK || len(acked[op.Key]) < 2 {
			continue
		}
		first := acked[op.Key][0]
		out.Ops[i].Found, out.Ops[i].Value, out.Ops[i].ModRevision = true, first.Value, first.Revision
		return out
	}
	t.Fatal("no key with two acknowledged writes")
	return nil
}

func TestLeaderKilledMidwayHistoryChecksOut(t *testing.T) {
	c := startCluster(t, 3)
	r, d := load(t, c)
	time.Sleep(time.Second)
	victim := c.leader()
	c.kill(victim)
	killedAt := r.Progress()
	// The other two elect a leader and the clients move to them: writes resume while the old leader is
	// down. How fast is the benchmarks' business; on two busy cores it has taken over 2 s.
	deadline := time.Now().Add(30 * time.Second)
	for r.Progress().Puts.OK <= killedAt.Puts.OK+10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if afterKill := r.Progress(); afterKill.Puts.OK <= killedAt.Puts.OK+10 {
		t.Errorf("writes did not resume in 30 s after the leader was killed: %s then %s", killedAt, afterKill)
	}
	c.restart(victim)
	time.Sleep(time.Second)
	h := r.Stop()
	verify(t, h)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := workload.CheckHashKV(ctx, c.endpoints(), d.dial); err != nil {
		t.Fatal(err)
	}
}

func TestCheckHashKVNamesUnreachableMember(t *testing.T) {
	c := startCluster(t, 3)
	c.kill(2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := workload.CheckHashKV(ctx, c.endpoints(), nil)
	if err == nil || !strings.Contains(err.Error(), c.members[2].clientURL) {
		t.Fatalf("CheckHashKV with a member down = %v, want an error naming %s", err, c.members[2].clientURL)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	eps := c.endpoints()[:2]
	if _, err := workload.CheckHashKV(ctx, []string{eps[0], eps[0]}, nil); err == nil || !strings.Contains(err.Error(), "same member") {
		t.Fatalf("CheckHashKV with one member twice = %v, want a same-member error", err)
	}
	if _, err := workload.CheckHashKV(ctx, eps, nil); err != nil {
		t.Fatalf("CheckHashKV on the two running members: %v", err)
	}
}
