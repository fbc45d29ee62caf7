package workload_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/workload"
)

// Hand-built histories, times in milliseconds. Each bad one is a way etcd (or the operator) could break
// its promises; each good one is a behaviour a correct cluster shows and the checker must accept.

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func put(key, value string, rev int64, call, ret int) workload.Op {
	return workload.Op{Kind: workload.Put, Key: key, Value: value, Revision: rev, Call: ms(call), Return: ms(ret)}
}

func unknownPut(key, value string, call, ret int) workload.Op {
	return workload.Op{Kind: workload.Put, Key: key, Value: value, Outcome: workload.Unknown, Call: ms(call),
		Return: ms(ret), Err: "context deadline exceeded"}
}

func failedPut(key, value string, call, ret int) workload.Op {
	return workload.Op{Kind: workload.Put, Key: key, Value: value, Outcome: workload.Failed, Call: ms(call),
		Return: ms(ret), Err: "etcdserver: too many requests"}
}

// get reads value at modRev ("" for an absent key) when the store was at rev.
func get(key, value string, modRev, rev int64, call, ret int) workload.Op {
	return workload.Op{Client: 1, Kind: workload.Get, Key: key, Value: value, Found: value != "",
		ModRevision: modRev, Revision: rev, Call: ms(call), Return: ms(ret)}
}

func final(key, value string, modRev, rev int64, call, ret int) workload.Op {
	op := get(key, value, modRev, rev, call, ret)
	op.Client, op.Final = -1, true
	return op
}

func history(ops ...workload.Op) *workload.History {
	h := &workload.History{Ops: ops}
	for _, op := range ops {
		if !slices.Contains(h.Keys, op.Key) {
			h.Keys = append(h.Keys, op.Key)
		}
	}
	return h
}

func TestCheckersOnHandBuiltHistories(t *testing.T) {
	tests := []struct {
		name string
		h    *workload.History
		// which checks must report a problem
		illegal, lost, revisions bool
	}{
		{name: "writes and reads in sequence", h: history(
			put("k", "a", 2, 0, 1), get("k", "a", 2, 2, 2, 3), put("k", "b", 3, 4, 5), final("k", "b", 3, 3, 10, 11))},
		{name: "read concurrent with a write sees the old value", h: history(
			put("k", "a", 2, 0, 1), put("k", "b", 3, 2, 6), get("k", "a", 2, 2, 3, 4), final("k", "b", 3, 3, 10, 11))},
		{name: "read concurrent with a write sees the new value", h: history(
			put("k", "a", 2, 0, 1), put("k", "b", 3, 2, 6), get("k", "b", 3, 3, 3, 4), final("k", "b", 3, 3, 10, 11))},
		{name: "stale read after an acknowledged write", illegal: true, revisions: true, h: history(
			put("k", "a", 2, 0, 1), put("k", "b", 3, 2, 3), get("k", "a", 2, 3, 4, 5), final("k", "b", 3, 3, 10, 11))},
		{name: "acknowledged write lost, key absent at the end", illegal: true, lost: true, revisions: true, h: history(
			put("k", "a", 2, 0, 1), final("k", "", 0, 1, 5, 6))},
		{name: "acknowledged write lost, older value at the end", illegal: true, lost: true, revisions: true, h: history(
			put("k", "a", 2, 0, 1), put("k", "b", 3, 2, 3), final("k", "a", 2, 3, 5, 6))},
		{name: "read of a value never written", illegal: true, h: history(
			put("k", "a", 2, 0, 1), get("k", "zzz", 2, 2, 2, 3), final("k", "a", 2, 2, 5, 6))},
		{name: "final read of a value never written", illegal: true, lost: true, h: history(
			put("k", "a", 2, 0, 1), final("k", "zzz", 4, 4, 5, 6))},
		{name: "read of a value written to another key", illegal: true, h: history(
			put("k", "a", 2, 0, 1), get("j", "a", 2, 2, 2, 3), final("k", "a", 2, 2, 5, 6))},
		{name: "read of a write that certainly failed", illegal: true, h: history(
			failedPut("k", "x", 0, 1), get("k", "x", 2, 2, 2, 3))},
		{name: "unknown write read later", h: history(
			put("k", "a", 2, 0, 1), unknownPut("k", "u", 2, 3), get("k", "u", 3, 3, 10, 11), final("k", "u", 3, 3, 12, 13))},
		{name: "unknown write applied after its client gave up", h: history(
			put("k", "a", 2, 0, 1), unknownPut("k", "u", 2, 3), get("k", "a", 2, 2, 4, 5), final("k", "u", 3, 3, 12, 13))},
		{name: "unknown write never applied", h: history(
			put("k", "a", 2, 0, 1), unknownPut("k", "u", 2, 3), final("k", "a", 2, 2, 10, 11))},
		{name: "unknown write read before it was called", illegal: true, h: history(
			get("k", "u", 3, 3, 0, 1), unknownPut("k", "u", 2, 3))},
		{name: "unknown write read at two revisions", illegal: true, h: history(
			unknownPut("k", "u", 0, 1), get("k", "u", 3, 3, 2, 3), get("k", "u", 4, 4, 4, 5))},
		{name: "write revisions go backwards", illegal: true, lost: true, revisions: true, h: history(
			put("k", "a", 5, 0, 1), put("k", "b", 4, 2, 3), final("k", "b", 4, 5, 10, 11))},
		{name: "read reports another revision than its write", illegal: true, h: history(
			put("k", "a", 2, 0, 1), get("k", "a", 3, 3, 2, 3), final("k", "a", 3, 3, 5, 6)), lost: true},
		{name: "store revision goes backwards across keys", revisions: true, h: history(
			put("k", "a", 5, 0, 1), get("j", "", 0, 4, 2, 3), final("k", "a", 5, 5, 10, 11), final("j", "", 0, 5, 10, 11))},
		{name: "no final read despite acknowledged writes", lost: true, h: history(
			put("k", "a", 2, 0, 1), get("k", "a", 2, 2, 2, 3))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			res := workload.Check(tt.h, 10*time.Second, dir)
			switch {
			case tt.illegal && res.Verdict != porcupine.Illegal:
				t.Errorf("Check = %s, want Illegal", res.Verdict)
			case !tt.illegal && res.Verdict != porcupine.Ok:
				t.Errorf("Check = %s, want Ok: %v", res.Verdict, res.Err())
			case tt.illegal:
				if !strings.Contains(res.Description, "key ") {
					t.Errorf("description names no key: %q", res.Description)
				}
				if st, err := os.Stat(res.Visualization); err != nil || st.Size() == 0 {
					t.Errorf("visualization %q: %v", res.Visualization, err)
				}
				t.Logf("described as: %v", res.Err())
			}
			if err := workload.LostWrites(tt.h); (err != nil) != tt.lost {
				t.Errorf("LostWrites = %v, want an error: %t", err, tt.lost)
			}
			if err := workload.CheckRevisions(tt.h); (err != nil) != tt.revisions {
				t.Errorf("CheckRevisions = %v, want an error: %t", err, tt.revisions)
			}
		})
	}
}

func TestHistoryErrors(t *testing.T) {
	h := &workload.History{Ops: []workload.Op{
		{Kind: workload.Put, Outcome: workload.Unknown, Err: "deadline", Call: 3 * time.Second},
		{Kind: workload.Get, Outcome: workload.OK},
		{Kind: workload.Get, Outcome: workload.Failed, Err: "deadline", Call: time.Second},
		{Kind: workload.Get, Outcome: workload.Failed, Err: "refused", Call: 2 * time.Second},
	}}
	got := h.Errors(5)
	want := []string{"2x (first at 1s): deadline", "1x (first at 2s): refused"}
	if !slices.Equal(got, want) {
		t.Fatalf("Errors(5) = %q, want %q", got, want)
	}
	if got := h.Errors(1); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("Errors(1) = %q, want the most frequent only", got)
	}
}
