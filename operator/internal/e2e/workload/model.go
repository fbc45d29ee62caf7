package workload

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/anishathalye/porcupine"
)

// The sequential specification porcupine checks against: each key is a register holding a value and the
// revision that wrote it. Keys are independent, so histories are partitioned by key, which keeps the
// search small. Revisions make the model stricter than a plain register: a read must report the mod
// revision of the write it returns, and successive writes of a key must get increasing revisions.

// input is what an operation asked for.
type input struct {
	put   bool
	key   string
	value string // for a put
	rev   int64  // for a put: the revision it created; 0 when not known
}

// output is what a read returned; puts have none.
type output struct {
	found  bool
	value  string
	modRev int64
}

// register is the state of one key.
type register struct {
	found bool
	value string
	rev   int64 // 0 while absent, or after a write whose revision is not known
}

func step(state, in, out any) (bool, any) {
	s, i := state.(register), in.(input)
	if i.put {
		// Revisions of one key grow with every write; unknown ones cannot be compared.
		if i.rev != 0 && s.rev != 0 && i.rev <= s.rev {
			return false, s
		}
		return true, register{found: true, value: i.value, rev: i.rev}
	}
	o := out.(output)
	if o.found != s.found || o.value != s.value || (s.rev != 0 && o.modRev != s.rev) {
		return false, s
	}
	if s.rev == 0 && s.found { // the read tells the revision of a write that did not
		s.rev = o.modRev
	}
	return true, s
}

var registerModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return register{} },
	Step:      step,
	Hash: func(state any) uint64 {
		s := state.(register)
		h := fnv.New64a()
		_, _ = fmt.Fprintf(h, "%t/%s/%d", s.found, s.value, s.rev)
		return h.Sum64()
	},
	DescribeOperation: func(in, out any) string {
		i := in.(input)
		if i.put {
			return fmt.Sprintf("put %s@%d", i.value, i.rev)
		}
		o := out.(output)
		if !o.found {
			return "get -> (absent)"
		}
		return fmt.Sprintf("get -> %s@%d", o.value, o.modRev)
	},
	DescribeState: func(state any) string {
		s := state.(register)
		if !s.found {
			return "(absent)"
		}
		return fmt.Sprintf("%s@%d", s.value, s.rev)
	},
	DescribeOperationMetadata: func(meta any) string {
		if meta == nil {
			return ""
		}
		return meta.(opMeta).op.String()
	},
}

// opMeta travels with each porcupine operation so results can name the recorded operation.
type opMeta struct {
	index int // in History.Ops
	op    Op
}

// partitionByKey splits a history into one sub-history per key, in order of first appearance so the
// result is the same every time (descriptions rely on that).
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := op.Input.(input).key
		i, ok := index[k]
		if !ok {
			i = len(parts)
			index[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// operations turns a history into porcupine's form.
//
// Failed operations are left out: they had no effect. An Unknown write gets the return time porcupine
// expects for an operation that never returned, "infinity", so it may take effect at any point after its
// call. Two rewrites then shrink the search without changing the verdict, because writes return nothing
// and values are unique:
//   - an Unknown write whose value no read returned is dropped: if a linearization places it somewhere,
//     removing it leaves a valid linearization (no read depended on it, and the revisions of the writes
//     around it still increase), and a valid linearization without it extends by placing it last;
//   - an Unknown write whose value was read must take effect before the earliest such read returned, and
//     at the mod revision that read reported, so it gets both.
func operations(h *History) []porcupine.Operation {
	readers := map[string][]int{} // value -> indexes of OK reads that returned it
	for i, op := range h.Ops {
		if op.Kind == Get && op.Outcome == OK && op.Found {
			readers[op.Value] = append(readers[op.Value], i)
		}
	}
	finalClient := 0
	for _, op := range h.Ops {
		finalClient = max(finalClient, op.Client+1)
	}
	var out []porcupine.Operation
	for i, op := range h.Ops {
		if op.Outcome == Failed {
			continue
		}
		pop := porcupine.Operation{
			ClientId: op.Client,
			Call:     int64(op.Call),
			Return:   int64(op.Return),
			Metadata: opMeta{index: i, op: op},
		}
		if op.Client < 0 { // porcupine's visualization wants client IDs from zero
			pop.ClientId = finalClient
		}
		switch {
		case op.Kind == Get:
			pop.Input = input{key: op.Key}
			pop.Output = output{found: op.Found, value: op.Value, modRev: op.ModRevision}
		case op.Outcome == OK:
			pop.Input = input{put: true, key: op.Key, value: op.Value, rev: op.Revision}
		default: // Unknown
			in := input{put: true, key: op.Key, value: op.Value}
			pop.Return = math.MaxInt64
			for _, r := range readers[op.Value] {
				read := h.Ops[r]
				if read.Key != op.Key {
					continue // a value read from another key cannot come from this write
				}
				if pop.Return == math.MaxInt64 {
					in.rev = read.ModRevision
				}
				pop.Return = min(pop.Return, int64(read.Return))
			}
			if pop.Return == math.MaxInt64 {
				continue // never observed: see above
			}
			// A read that returned before the write was even called stays impossible this way.
			pop.Return = max(pop.Return, pop.Call)
			pop.Input = input{put: true, key: in.key, value: in.value, rev: in.rev}
		}
		out = append(out, pop)
	}
	return out
}
