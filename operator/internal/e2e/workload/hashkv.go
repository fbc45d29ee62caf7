package workload

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Agreement is what CheckHashKV found when the members agree.
type Agreement struct {
	Revision int64
	Hash     uint32
	Members  int
}

// memberState is one member's answer, kept for error messages.
type memberState struct {
	endpoint string
	id       uint64
	rev      int64
	hash     uint32
	compact  int64
	err      error
}

func (m memberState) String() string {
	if m.err != nil {
		return fmt.Sprintf("%s: %v", m.endpoint, m.err)
	}
	s := fmt.Sprintf("%s (member %x): revision %d", m.endpoint, m.id, m.rev)
	if m.hash != 0 || m.compact != 0 {
		s += fmt.Sprintf(", hash %d, compact revision %d", m.hash, m.compact)
	}
	return s
}

// CheckHashKV waits until every member behind endpoints (one endpoint per member) reports the same
// revision, then compares the hash of each member's key-value store at that revision. Writes must have
// stopped; ctx bounds the wait. The error names every member with its revision or hash.
func CheckHashKV(ctx context.Context, endpoints []string, dial DialFunc) (Agreement, error) {
	cli, err := NewClient(endpoints, dial)
	if err != nil {
		return Agreement{}, err
	}
	defer func() { _ = cli.Close() }()
	members, err := sameRevision(ctx, cli, endpoints)
	if err != nil {
		return Agreement{}, err
	}
	seen := map[uint64]string{}
	for _, m := range members {
		if other, dup := seen[m.id]; dup {
			return Agreement{}, fmt.Errorf("%s and %s are the same member %x: give one endpoint per member", other, m.endpoint, m.id)
		}
		seen[m.id] = m.endpoint
	}
	rev := members[0].rev
	for i := range members {
		m := &members[i]
		resp, err := cli.HashKV(ctx, m.endpoint, rev)
		if err != nil {
			return Agreement{}, fmt.Errorf("HashKV at revision %d from %s: %w", rev, m.endpoint, err)
		}
		m.hash, m.compact = resp.Hash, resp.CompactRevision
	}
	for _, m := range members[1:] {
		if m.hash != members[0].hash {
			return Agreement{}, fmt.Errorf("members disagree on the hash of their stores at revision %d:\n  %s",
				rev, joinStates(members))
		}
	}
	return Agreement{Revision: rev, Hash: members[0].hash, Members: len(members)}, nil
}

// sameRevision polls the members' status until all answer with one revision.
func sameRevision(ctx context.Context, cli *clientv3.Client, endpoints []string) ([]memberState, error) {
	for {
		members := make([]memberState, len(endpoints))
		agree := true
		for i, ep := range endpoints {
			members[i].endpoint = ep
			callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := cli.Status(callCtx, ep)
			cancel()
			if err != nil {
				members[i].err = err
				agree = false
				continue
			}
			members[i].id, members[i].rev = st.Header.MemberId, st.Header.Revision
			agree = agree && st.Header.Revision == members[0].rev
		}
		if agree {
			return members, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("members did not reach one revision (%w):\n  %s", ctx.Err(), joinStates(members))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func joinStates(members []memberState) string {
	lines := make([]string, len(members))
	for i, m := range members {
		lines[i] = m.String()
	}
	return strings.Join(lines, "\n  ")
}
