package workload_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/workload"
)

// simulate builds the history of a correct store under heavy concurrency: each of clients issues ops
// operations back to back; each takes effect at a random instant inside its interval, in which order a
// sequential register with etcd's revisions answers them. A fraction of writes time out (Unknown): half
// of those take effect, possibly after the client gave up; a fraction of reads fail. Every check must
// accept every such history: a false alarm in the end-to-end suite would be as bad as a missed bug.
func simulate(seed uint64, clients, ops, keys int) *workload.History {
	rng := rand.New(rand.NewPCG(seed, seed))
	type sim struct {
		op      workload.Op
		at      time.Duration // when it takes effect
		applies bool
	}
	var all []*sim
	for c := range clients {
		now := time.Duration(rng.IntN(1000))
		for i := range ops {
			s := &sim{applies: true}
			s.op = workload.Op{Client: c, Key: fmt.Sprintf("k%d", rng.IntN(keys)), Call: now}
			s.op.Return = now + time.Duration(1+rng.IntN(5000))
			s.at = s.op.Call + time.Duration(rng.Int64N(int64(s.op.Return-s.op.Call)+1))
			if rng.IntN(2) == 0 {
				s.op.Kind, s.op.Value = workload.Put, fmt.Sprintf("c%d-%d", c, i)
				if rng.IntN(50) == 0 {
					s.op.Outcome, s.applies = workload.Unknown, rng.IntN(2) == 0
					s.at = s.op.Call + time.Duration(rng.Int64N(int64(s.op.Return-s.op.Call)+20000))
				}
			} else {
				s.op.Kind = workload.Get
				if rng.IntN(50) == 0 {
					s.op.Outcome, s.applies = workload.Failed, false
				}
			}
			all = append(all, s)
			now = s.op.Return + time.Duration(rng.IntN(200))
		}
	}
	end := slices.MaxFunc(all, func(a, b *sim) int { return cmp.Compare(a.at, b.at) }).at + time.Second
	h := &workload.History{}
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		h.Keys = append(h.Keys, key)
		all = append(all, &sim{applies: true, at: end + time.Duration(k),
			op: workload.Op{Client: -1, Final: true, Kind: workload.Get, Key: key, Call: end, Return: end + time.Second}})
	}
	slices.SortStableFunc(all, func(a, b *sim) int { return cmp.Compare(a.at, b.at) })
	type reg struct {
		value  string
		modRev int64
	}
	store, rev := map[string]reg{}, int64(1)
	for _, s := range all {
		switch {
		case !s.applies:
		case s.op.Kind == workload.Put:
			rev++
			store[s.op.Key] = reg{s.op.Value, rev}
			if s.op.Outcome == workload.OK {
				s.op.Revision = rev
			}
		default:
			r, found := store[s.op.Key]
			s.op.Found, s.op.Value, s.op.ModRevision, s.op.Revision = found, r.value, r.modRev, rev
		}
		h.Ops = append(h.Ops, s.op)
	}
	return h
}

func TestSimulatedCorrectHistoriesPass(t *testing.T) {
	for seed := range uint64(30) {
		h := simulate(seed, 3+int(seed%3), 400, 1+int(seed%8))
		if res := workload.Check(h, time.Minute, ""); res.Verdict != porcupine.Ok {
			t.Fatalf("seed %d: %s: %v", seed, h.Counts(), res.Err())
		}
		if err := workload.CheckRevisions(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := workload.LostWrites(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestCheckScales reports how long checking takes and how much it allocates for a history of the size
// a long end-to-end scenario produces (3 clients, 8 keys).
func TestCheckScales(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for _, perClient := range []int{10000, 40000} {
		h := simulate(1, 3, perClient, 8)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := workload.Check(h, 5*time.Minute, "")
		runtime.ReadMemStats(&after)
		t.Logf("%d operations (%s): %s in %s, %d MiB allocated", len(h.Ops), h.Counts(), res.Verdict,
			res.Elapsed.Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>20)
		if res.Verdict != porcupine.Ok {
			t.Fatal(res.Err())
		}
	}
}

// TestSimulatedStaleReadIsCaught makes one read among thousands return a value that an acknowledged
// write had overwritten before the read began, and expects both porcupine and the revision check to
// notice.
func TestSimulatedStaleReadIsCaught(t *testing.T) {
	for seed := range uint64(10) {
		h := simulate(seed, 3, 1000, 4)
		if !injectStaleRead(h, seed) {
			t.Fatalf("seed %d: no read to make stale", seed)
		}
		if res := workload.Check(h, time.Minute, ""); res.Verdict != porcupine.Illegal {
			t.Errorf("seed %d: one stale read: Check = %s, want Illegal", seed, res.Verdict)
		}
		if err := workload.CheckRevisions(h); err == nil {
			t.Errorf("seed %d: one stale read: CheckRevisions found nothing", seed)
		}
	}
}

// injectStaleRead picks a successful read G of a key, an acknowledged write Q of that key that returned
// before G was called, and an acknowledged write W of the key with a lower revision than Q, and makes G
// return W's value: in any linearization W precedes Q (revisions) and Q precedes G (real time).
func injectStaleRead(h *workload.History, seed uint64) bool {
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, gi := range rng.Perm(len(h.Ops)) {
		g := h.Ops[gi]
		if g.Kind != workload.Get || g.Outcome != workload.OK || g.Final {
			continue
		}
		var q, w *workload.Op
		for i := range h.Ops {
			op := &h.Ops[i]
			if op.Kind == workload.Put && op.Outcome == workload.OK && op.Key == g.Key && op.Return < g.Call &&
				(q == nil || op.Revision > q.Revision) {
				q = op
			}
		}
		for i := range h.Ops {
			op := &h.Ops[i]
			if q != nil && op.Kind == workload.Put && op.Outcome == workload.OK && op.Key == g.Key && op.Revision < q.Revision {
				w = op
				break
			}
		}
		if w == nil {
			continue
		}
		h.Ops[gi].Found, h.Ops[gi].Value, h.Ops[gi].ModRevision = true, w.Value, w.Revision
		return true
	}
	return false
}
