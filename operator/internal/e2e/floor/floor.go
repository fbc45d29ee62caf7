// Package floor measures the physical floor for the operator's benchmarks: what plain etcd processes
// need on this machine, with no Kubernetes and no operator in between. Bootstrap starts N members of a
// static cluster on loopback and times them until every member is healthy; FailureRecovery kills one
// with SIGKILL, restarts it on its data dir and times the cluster until it is all healthy again. The
// operator's figures are only meaningful next to these, measured in the same run on the same machine.
package floor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/localport"
)

// Cluster is a static etcd cluster on loopback, started by Bootstrap.
type Cluster struct {
	binary  string
	members []*member
}

type member struct {
	name      string
	clientURL string
	args      []string
	logPath   string
	proc      *process // the current process; replaced on restart
}

// Bootstrap starts n members of a new static cluster (the given etcd binary, 127.0.0.1 with distinct
// ports, --initial-cluster naming all of them, a data dir each under dir, extraArgs appended to every
// member's flags) and waits until every member reports itself healthy. It returns the time from
// starting the first process to the last member turning healthy. The caller must Stop the cluster; on
// error nothing is left running.
func Bootstrap(ctx context.Context, binary string, n int, dir string, extraArgs ...string) (*Cluster, time.Duration, error) {
	if n < 1 {
		return nil, 0, fmt.Errorf("floor: %d members", n)
	}
	// Another program can bind a port between our check and etcd's bind; then try again on new ports.
	for attempt := 1; ; attempt++ {
		c, elapsed, err := bootstrap(ctx, binary, n, filepath.Join(dir, fmt.Sprintf("try%d", attempt)), extraArgs)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return c, elapsed, err
		}
	}
}

func bootstrap(ctx context.Context, binary string, n int, dir string, extraArgs []string) (*Cluster, time.Duration, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, err
	}
	c := &Cluster{binary: binary}
	token := fmt.Sprintf("floor-%08x", rand.Uint32())
	var initial []string
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client, peer, err := freePorts()
		if err != nil {
			return nil, 0, err
		}
		m := &member{name: name, clientURL: "http://" + client, logPath: filepath.Join(dir, name+".log")}
		m.args = []string{
			"--name=" + name,
			"--data-dir=" + filepath.Join(dir, name+".etcd"),
			"--listen-client-urls=" + m.clientURL,
			"--advertise-client-urls=" + m.clientURL,
			"--listen-peer-urls=http://" + peer,
			"--initial-advertise-peer-urls=http://" + peer,
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + token,
		}
		c.members = append(c.members, m)
		initial = append(initial, name+"=http://"+peer)
	}
	for _, m := range c.members {
		m.args = append(m.args, "--initial-cluster="+strings.Join(initial, ","))
		m.args = append(m.args, extraArgs...)
	}

	start := time.Now()
	for _, m := range c.members {
		p, err := startProcess(binary, m.logPath, m.args)
		if err != nil {
			c.Stop()
			return nil, 0, err
		}
		m.proc = p
	}
	if err := c.waitHealthy(ctx); err != nil {
		c.Stop()
		return nil, 0, fmt.Errorf("bootstrap %d members: %w", n, err)
	}
	return c, time.Since(start), nil
}

// Endpoints returns the members' client URLs, in member order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientURL
	}
	return eps
}

// PIDs returns the process IDs of the members' current processes.
func (c *Cluster) PIDs() []int {
	pids := make([]int, len(c.members))
	for i, m := range c.members {
		pids[i] = m.proc.pid()
	}
	return pids
}

// Stop kills every member and returns once all are reaped; data dirs stay. It uses SIGKILL: the data is
// thrown away, and with SIGTERM a leader that sees its followers go first waits seconds for a
// leadership transfer that cannot happen, which would slow down every measurement loop.
func (c *Cluster) Stop() {
	for _, m := range c.members {
		if m.proc != nil {
			m.proc.kill()
		}
	}
}

// FailureRecovery kills member i with SIGKILL, starts it again at once with the same flags and data dir,
// and returns the time from the kill until every member is healthy again.
func (c *Cluster) FailureRecovery(ctx context.Context, i int) (time.Duration, error) {
	if i < 0 || i >= len(c.members) {
		return 0, fmt.Errorf("floor: no member %d", i)
	}
	m := c.members[i]
	start := time.Now()
	m.proc.kill()
	p, err := startProcess(c.binary, m.logPath, m.args)
	if err != nil {
		return 0, fmt.Errorf("restart %s: %w", m.name, err)
	}
	m.proc = p
	if err := c.waitHealthy(ctx); err != nil {
		return 0, fmt.Errorf("recover from killing %s: %w", m.name, err)
	}
	return time.Since(start), nil
}

// freePorts picks two loopback addresses nobody listens on (see package localport).
func freePorts() (client, peer string, err error) {
	if client, err = localport.Free(); err == nil {
		peer, err = localport.Free()
	}
	if err != nil {
		return "", "", fmt.Errorf("floor: %w", err)
	}
	return client, peer, nil
}
