package workload

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// CheckRevisions checks that revisions never go backwards in real time. If operation A returned before
// operation B was called, both succeeded, then:
//   - B's header revision is at least A's (a linearizable read is served at or after every write that
//     completed before it began), and greater if B is a write (it is applied after everything A saw);
//   - on the same key, B observes a revision at least A's (a write's own revision, a read's mod revision),
//     and greater if B is a write.
//
// porcupine's model already implies the per-key rule; this check is cheap, covers revisions across keys,
// and names the two operations involved. It returns nil or an error listing the first violations.
func CheckRevisions(h *History) error {
	var ok []Op
	for _, op := range h.Ops {
		if op.Outcome == OK {
			ok = append(ok, op)
		}
	}
	byCall := slices.Clone(ok)
	slices.SortFunc(byCall, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	byReturn := ok
	slices.SortFunc(byReturn, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })

	var errs []error
	var global *Op             // the completed operation with the highest header revision so far
	perKey := map[string]*Op{} // per key, the completed operation that observed the highest revision
	j := 0
	for _, b := range byCall {
		for ; j < len(byReturn) && byReturn[j].Return < b.Call; j++ {
			a := &byReturn[j]
			if global == nil || a.Revision > global.Revision {
				global = a
			}
			if prev := perKey[a.Key]; prev == nil || keyRevision(*a) > keyRevision(*prev) {
				perKey[a.Key] = a
			}
		}
		if global != nil && behind(b.Revision, global.Revision, b.Kind == Put) {
			errs = append(errs, fmt.Errorf("header revision went backwards: %s\n  came after %s", b, global))
		}
		if a := perKey[b.Key]; a != nil && behind(keyRevision(b), keyRevision(*a), b.Kind == Put) {
			errs = append(errs, fmt.Errorf("revision of %s went backwards: %s\n  came after %s", b.Key, b, a))
		}
		if len(errs) >= 5 {
			errs = append(errs, errors.New("(stopped after 5 violations)"))
			break
		}
	}
	return errors.Join(errs...)
}

// keyRevision is the revision of the key an operation observed.
func keyRevision(op Op) int64 {
	if op.Kind == Put {
		return op.Revision
	}
	return op.ModRevision
}

func behind(rev, earlier int64, strict bool) bool {
	if strict {
		return rev <= earlier
	}
	return rev < earlier
}
