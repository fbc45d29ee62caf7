// Package workload drives a small, checkable load against an etcd cluster and judges the result: a few
// clients write and read a handful of keys through the cluster's client endpoints while faults happen,
// every operation is recorded with its real-time interval, and afterwards the history is checked for
// linearizability (porcupine, one register per key), for revisions that go backwards, and for
// acknowledged writes that were lost. CheckHashKV then compares the members' stores.
//
// The hard part is what an error means. etcd's client retries a write only when it is sure the request
// never left, so a write that returns an error may or may not have been applied, now or later: such a
// write is recorded as Unknown and the checker lets it take effect at any point after its call, or never.
// A failed read changes nothing and is dropped. Only errors the server gives before it proposes anything
// (see classifyPutError) make a write Failed, which the checker treats as never having happened.
package workload

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Kind is what an operation does.
type Kind int

const (
	Put Kind = iota // write a value unique to this history
	Get             // linearizable read of one key
)

func (k Kind) String() string {
	if k == Put {
		return "put"
	}
	return "get"
}

// Outcome is what the client knows about an operation once it returned.
type Outcome int

const (
	// OK: the server answered; the operation took effect between Call and Return.
	OK Outcome = iota
	// Unknown: a write whose effect is not known; it may take effect at any time after Call, or never.
	Unknown
	// Failed: the operation certainly had no effect (a rejected write, or any failed read).
	Failed
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Unknown:
		return "unknown"
	default:
		return "failed"
	}
}

// Op is one recorded operation. Times are offsets from History.Start, all read from one monotonic clock.
type Op struct {
	Client int // index of the client that issued it; the final reads use client -1
	Kind   Kind
	Key    string
	// Value is the value written (Put) or read (Get; "" when the key did not exist).
	Value string
	// Found tells, for an OK Get, whether the key existed.
	Found   bool
	Outcome Outcome
	Call    time.Duration
	Return  time.Duration // when the client got its answer or gave up
	// Revision is the response header's revision: for a Put, the revision it created (the key's new mod
	// revision); for a Get, the store's revision when the read was served. Zero unless OK.
	Revision int64
	// ModRevision is, for an OK Get, the key's mod revision (0 when it did not exist).
	ModRevision int64
	// Final marks the reads made after the load stopped, which the lost-write checks rely on.
	Final bool
	Err   string // the error, for Unknown and Failed operations
}

func (op Op) String() string {
	var s string
	switch {
	case op.Kind == Put:
		s = fmt.Sprintf("put %s=%s", op.Key, op.Value)
	case op.Outcome != OK:
		s = fmt.Sprintf("get %s", op.Key)
	case !op.Found:
		s = fmt.Sprintf("get %s -> (absent)", op.Key)
	default:
		s = fmt.Sprintf("get %s -> %s@%d", op.Key, op.Value, op.ModRevision)
	}
	if op.Outcome == OK {
		s += fmt.Sprintf(" rev %d", op.Revision)
	} else {
		s += fmt.Sprintf(" %s (%s)", op.Outcome, op.Err)
	}
	final := ""
	if op.Final {
		final = " final"
	}
	return fmt.Sprintf("[client %d%s %s..%s] %s", op.Client, final, fmtOffset(op.Call), fmtOffset(op.Return), s)
}

func fmtOffset(d time.Duration) string { return d.Round(time.Microsecond).String() }

// History is everything a run did. Keys start absent: every run writes under a prefix of its own.
type History struct {
	Start time.Time // the clock's origin
	Keys  []string
	Ops   []Op
}

// Counts tallies operations by kind and outcome.
type Counts struct {
	Puts, Gets KindCounts
}

// KindCounts tallies one kind of operation.
type KindCounts struct {
	OK, Unknown, Failed int
}

func (c Counts) String() string {
	return fmt.Sprintf("puts %d ok/%d unknown/%d failed, gets %d ok/%d failed",
		c.Puts.OK, c.Puts.Unknown, c.Puts.Failed, c.Gets.OK, c.Gets.Failed)
}

// Counts tallies the history's operations, the final reads included.
func (h *History) Counts() Counts {
	var c Counts
	for _, op := range h.Ops {
		c.add(op)
	}
	return c
}

// add counts one operation under its kind and outcome.
func (c *Counts) add(op Op) {
	kc := &c.Gets
	if op.Kind == Put {
		kc = &c.Puts
	}
	switch op.Outcome {
	case OK:
		kc.OK++
	case Unknown:
		kc.Unknown++
	default:
		kc.Failed++
	}
}

// Errors summarises why operations did not succeed: each distinct error with its count and the time of
// its first occurrence since the start, most frequent first, at most limit of them.
func (h *History) Errors(limit int) []string {
	type tally struct {
		n     int
		first time.Duration
	}
	seen := map[string]*tally{}
	for _, op := range h.Ops {
		if op.Err == "" {
			continue
		}
		if t := seen[op.Err]; t != nil {
			t.n++
			t.first = min(t.first, op.Call)
		} else {
			seen[op.Err] = &tally{n: 1, first: op.Call}
		}
	}
	errs := slices.Collect(maps.Keys(seen))
	slices.SortFunc(errs, func(a, b string) int {
		return cmp.Or(cmp.Compare(seen[b].n, seen[a].n), cmp.Compare(a, b))
	})
	out := make([]string, 0, min(limit, len(errs)))
	for _, e := range errs[:min(limit, len(errs))] {
		out = append(out, fmt.Sprintf("%dx (first at %s): %s", seen[e].n, seen[e].first.Round(time.Millisecond), e))
	}
	return out
}
