package workload

import (
	"errors"
	"fmt"
)

// LostWrites checks the final reads directly, without a search: for every key, the last successful
// final read must return a value that some write of that key wrote (acknowledged or unknown, never one
// that certainly failed), that write must not precede, in real time, an acknowledged write of the key,
// and the read's mod revision must be at least that of every acknowledged write of the key. A key with
// acknowledged writes and no successful final read is an error too: nothing shows the writes survived.
//
// Check finds the same losses, since the final reads are part of the history; this check says plainly
// which write was lost and cannot time out.
func LostWrites(h *History) error {
	finals := map[string]Op{}
	for _, op := range h.Ops {
		if op.Final && op.Kind == Get && op.Outcome == OK {
			finals[op.Key] = op
		}
	}
	var errs []error
	for _, key := range h.Keys {
		if err := checkFinal(h, key, finals); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkFinal(h *History, key string, finals map[string]Op) error {
	lastAck, writers := writesOf(h, key)
	final, read := finals[key]
	switch {
	case !read && lastAck != nil:
		return fmt.Errorf("key %s: no final read succeeded, so nothing shows its acknowledged writes survived (last: %s)", key, lastAck)
	case !read:
		return nil
	case !final.Found && lastAck != nil:
		return fmt.Errorf("key %s: lost write: the final read found no key, but %s was acknowledged", key, lastAck)
	case !final.Found:
		return nil
	}
	w, ok := writers[final.Value]
	switch {
	case !ok:
		return fmt.Errorf("key %s: the final read returned a value no write of this key may have written: %s", key, final)
	case w.Outcome == OK && final.ModRevision != w.Revision:
		return fmt.Errorf("key %s: the final read %s reports another revision than its write %s", key, final, w)
	case lastAck != nil && final.ModRevision < lastAck.Revision:
		return fmt.Errorf("key %s: lost write: the final read %s is older than the acknowledged %s", key, final, lastAck)
	}
	if later := ackedAfter(h, key, w); later != nil {
		return fmt.Errorf("key %s: lost write: the final read %s returns the value of %s, "+
			"but %s was called after that one returned and acknowledged", key, final, w, later)
	}
	return nil
}

// writesOf returns the acknowledged write of key with the highest revision, and every write of key that
// may have taken effect, by value.
func writesOf(h *History, key string) (*Op, map[string]Op) {
	var lastAck *Op
	writers := map[string]Op{}
	for _, op := range h.Ops {
		if op.Key != key || op.Kind != Put || op.Outcome == Failed {
			continue
		}
		writers[op.Value] = op
		if op.Outcome == OK && (lastAck == nil || op.Revision > lastAck.Revision) {
			lastAck = &op
		}
	}
	return lastAck, writers
}

// ackedAfter returns an acknowledged write of key called after w returned, if w was acknowledged (an
// unknown write may take effect at any time, so nothing comes after it for sure).
func ackedAfter(h *History, key string, w Op) *Op {
	if w.Outcome != OK {
		return nil
	}
	for _, op := range h.Ops {
		if op.Key == key && op.Kind == Put && op.Outcome == OK && op.Call > w.Return {
			return &op
		}
	}
	return nil
}
