package etcdclient

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// Metered wraps a Factory so that every call its clients make is counted in requests, labelled by
// operation and outcome ("ok" or "error"). Operators of the operator read the rate to see how much load
// health checks and membership changes put on their etcd clusters.
func Metered(f Factory, requests *prometheus.CounterVec) Factory {
	return func(cfg Config) (Client, error) {
		c, err := f(cfg)
		if err != nil {
			return nil, err
		}
		return &metered{Client: c, requests: requests}, nil
	}
}

type metered struct {
	Client
	requests *prometheus.CounterVec
}

func (m *metered) count(op string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.requests.WithLabelValues(op, outcome).Inc()
}

func (m *metered) MemberList(ctx context.Context) ([]Member, error) {
	members, err := m.Client.MemberList(ctx)
	m.count("MemberList", err)
	return members, err
}

func (m *metered) AddLearner(ctx context.Context, peerURLs []string) (Member, error) {
	member, err := m.Client.AddLearner(ctx, peerURLs)
	m.count("AddLearner", err)
	return member, err
}

func (m *metered) Promote(ctx context.Context, id uint64) error {
	err := m.Client.Promote(ctx, id)
	m.count("Promote", err)
	return err
}

func (m *metered) Remove(ctx context.Context, id uint64) error {
	err := m.Client.Remove(ctx, id)
	m.count("Remove", err)
	return err
}

func (m *metered) MoveLeader(ctx context.Context, to uint64) error {
	err := m.Client.MoveLeader(ctx, to)
	m.count("MoveLeader", err)
	return err
}

func (m *metered) Status(ctx context.Context, endpoint string) (Status, error) {
	s, err := m.Client.Status(ctx, endpoint)
	m.count("Status", err)
	return s, err
}

func (m *metered) Health(ctx context.Context, endpoint string, learner bool) error {
	err := m.Client.Health(ctx, endpoint, learner)
	m.count("Health", err)
	return err
}
