package workload

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is the verdict of a linearizability check.
type Result struct {
	// Verdict is porcupine.Ok, porcupine.Illegal, or porcupine.Unknown when the check timed out.
	Verdict porcupine.CheckResult
	// Description says what went wrong, for any verdict but Ok.
	Description string
	// Visualization is the path of porcupine's HTML rendering of the history, written for any verdict but
	// Ok when Check was given a directory.
	Visualization string
	// Operations is how many operations were checked (after dropping failed ones and unobserved unknown
	// writes).
	Operations int
	Elapsed    time.Duration
}

// Err is nil for Ok, otherwise an error carrying the description and the visualization's path.
func (r Result) Err() error {
	if r.Verdict == porcupine.Ok {
		return nil
	}
	msg := fmt.Sprintf("linearizability: %s: %s", r.Verdict, r.Description)
	if r.Visualization != "" {
		msg += "\nvisualization: " + r.Visualization
	}
	return errors.New(msg)
}

// Check decides whether h is linearizable with respect to a register per key. timeout bounds the search
// (0: none); a search that runs out of time gives porcupine.Unknown. If vizDir is not empty and the
// verdict is not Ok, an HTML visualization is written there.
func Check(h *History, timeout time.Duration, vizDir string) Result {
	start := time.Now()
	ops := operations(h)
	// The verbose check records partial linearizations, which costs time on long histories: only a
	// history that failed is checked again that way, for the description and the visualization.
	verdict := porcupine.CheckOperationsTimeout(registerModel, ops, timeout)
	r := Result{Verdict: verdict, Operations: len(ops), Elapsed: time.Since(start)}
	if verdict == porcupine.Ok {
		return r
	}
	verdict, info := porcupine.CheckOperationsVerbose(registerModel, ops, timeout)
	r.Verdict, r.Elapsed = verdict, time.Since(start)
	switch verdict {
	case porcupine.Ok: // the first search ran out of time, this one did not
		return r
	case porcupine.Unknown:
		r.Description = fmt.Sprintf("the search for a linearization of %d operations timed out after %s; "+
			"the history is neither proven linearizable nor shown not to be", len(ops), timeout)
	default:
		r.Description = describeIllegal(partitionByKey(ops), info.PartialLinearizationsOperations())
	}
	if vizDir != "" {
		path, err := visualize(info, vizDir)
		if err != nil {
			r.Description += fmt.Sprintf(" (no visualization: %v)", err)
		}
		r.Visualization = path
	}
	return r
}

// describeIllegal names each key whose operations do not linearize, with where the longest linearization
// that porcupine found gets stuck: its last operations, and the operations that had to come next (those
// that returned earliest) but cannot.
func describeIllegal(parts [][]porcupine.Operation, partials [][][]porcupine.Operation) string {
	var b strings.Builder
	for p, part := range parts {
		if p >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		key := part[0].Input.(input).key
		fmt.Fprintf(&b, "\nkey %s: no linearization covers more than %d of its %d operations.", key, len(longest), len(part))
		placed := map[int]bool{}
		for _, op := range longest {
			placed[op.Metadata.(opMeta).index] = true
		}
		b.WriteString(" The longest linearization ends with:")
		for _, op := range longest[max(0, len(longest)-3):] {
			fmt.Fprintf(&b, "\n    %s", op.Metadata.(opMeta).op)
		}
		if len(longest) == 0 {
			b.WriteString(" (nothing)")
		}
		pending := slices.DeleteFunc(slices.Clone(part), func(op porcupine.Operation) bool {
			return placed[op.Metadata.(opMeta).index]
		})
		slices.SortFunc(pending, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
		b.WriteString("\n  and none of the operations that must come next can follow, the earliest-returning being:")
		for _, op := range pending[:min(3, len(pending))] {
			fmt.Fprintf(&b, "\n    %s", op.Metadata.(opMeta).op)
		}
	}
	if b.Len() == 0 {
		return "porcupine found no linearization"
	}
	return strings.TrimPrefix(b.String(), "\n")
}

func visualize(info porcupine.LinearizationInfo, dir string) (string, error) {
	f, err := os.CreateTemp(dir, "linearizability-*.html")
	if err != nil {
		return "", err
	}
	err = porcupine.Visualize(registerModel, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}
