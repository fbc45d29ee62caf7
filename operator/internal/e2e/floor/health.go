package floor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// pollInterval is how often each member is asked; it bounds the timing error of a measurement.
const pollInterval = 10 * time.Millisecond

// healthClient talks to loopback only; no proxy from the environment may come in between.
var healthClient = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: false},
}

// waitHealthy polls every member's /health until each has said true once, and fails early if a member's
// process exits. etcd's /health is true only when the member knows a leader and a linearizable read
// through it succeeds, which is what "healthy" means for the operator too.
func (c *Cluster) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			errs[i] = m.waitHealthy(ctx)
			if errs[i] != nil {
				cancel() // one member cannot make it: stop waiting for the others
			}
		})
	}
	wg.Wait()
	// Report the root cause, not the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

func (m *member) waitHealthy(ctx context.Context) error {
	var last error
	for {
		if err := m.proc.exited(); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if last = m.health(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy (%w): %w", m.name, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// health asks the member's /health endpoint once.
func (m *member) health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("/health: status %s, %w", resp.Status, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("/health: %s %q", h.Health, h.Reason)
	}
	return nil
}
