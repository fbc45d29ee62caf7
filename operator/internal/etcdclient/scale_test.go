package etcdclient_test

import (
	"testing"
	"time"
)

// TestScaleSequence grows a real cluster 1 -> 3 -> 5 and shrinks it to 3 through the Client, checking
// membership, health and leadership at every size. The first removal is the leader's.
func TestScaleSequence(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 1)
	assertCluster(t, tc)
	d := scaleSequence(t, tc)
	t.Logf("scale 1->3->5->3 took %s", d)
}

// BenchmarkScaleSequence times the same sequence; run it with
//
//	go test ./operator/internal/etcdclient/ -run XXX -bench ScaleSequence -benchtime 5x -count 1
//
// Starting the initial member and tearing everything down are not timed.
func BenchmarkScaleSequence(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tc := startCluster(b, 1)
		assertCluster(b, tc)
		b.StartTimer()
		d := scaleSequence(b, tc)
		b.StopTimer()
		b.Logf("run %d: scale 1->3->5->3 took %s", i, d)
		tc.stopAll()
	}
}

// scaleSequence scales a 1-member cluster to 3, 5 and back to 3 and returns how long that took.
func scaleSequence(tb testing.TB, tc *testCluster) time.Duration {
	tb.Helper()
	start := time.Now()
	for _, size := range []int{3, 5} {
		for len(tc.running()) < size {
			m, waited := addMember(tb, tc)
			tb.Logf("added %s (%x); AddLearner waited %s for the strict reconfig check", m.name, m.id, waited.Round(time.Millisecond))
		}
		assertCluster(tb, tc)
	}
	removedLeader := false
	for len(tc.running()) > 3 {
		leader := assertCluster(tb, tc)
		victim := tc.byID(leader)
		if removedLeader { // later removals take a follower, the usual case
			for _, m := range tc.running() {
				if m.id != leader {
					victim = m
					break
				}
			}
		}
		removeMember(tb, tc, victim)
		removedLeader = true
		tb.Logf("removed %s (%x, leader=%t)", victim.name, victim.id, victim.id == leader)
	}
	leader := assertCluster(tb, tc)
	if leader == 0 {
		tb.Fatal("no leader after scaling")
	}
	return time.Since(start)
}
