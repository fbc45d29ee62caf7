package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stopGrace is how long a component may take to shut down after SIGTERM before it gets SIGKILL.
const stopGrace = 10 * time.Second

// Stop ends every process in the cluster's namespace, deletes the namespace and removes the working
// directory. It is safe to call more than once; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var agentErr error
	if c.agent != nil { // Pods first: they are the apiserver's clients too
		agentErr = c.agent.Stop()
	}
	if c.fwd != nil {
		c.fwd.close()
	}
	// Clients of the apiserver first (in parallel: they do not depend on each other), then the apiserver,
	// then its store, so each shuts down against a live dependency instead of logging connection errors
	// until its grace period runs out. kube-proxy's nftables rules need no cleanup: they live in the
	// namespace and vanish with it.
	clients := []string{"coredns", "kube-proxy", "kube-scheduler", "kube-controller-manager"}
	for _, group := range [][]string{clients, {"kube-apiserver"}, {"etcd"}} {
		var wg sync.WaitGroup
		for _, p := range c.procs {
			for _, name := range group {
				if p.name == name {
					wg.Go(func() { p.stop(stopGrace) })
				}
			}
		}
		wg.Wait()
	}
	var errs []error
	if agentErr != nil {
		errs = append(errs, fmt.Errorf("node agent: %w", agentErr))
	}
	if c.ns != nil {
		// Pods' namespaces first (their veths leave the bridge with them), then the cluster's own; in each,
		// whatever callers started and left running.
		for _, name := range childNetNSNames(c.ns.name) {
			child := &netNS{name: name, ip: c.ns.ip}
			killNamespace(child)
			if err := child.delete(); err != nil {
				errs = append(errs, fmt.Errorf("delete network namespace: %w", err))
			}
		}
		killNamespace(c.ns)
		if err := c.ns.delete(); err != nil {
			errs = append(errs, fmt.Errorf("delete network namespace: %w", err))
		}
	}
	if c.watchdog != nil {
		_ = c.watchdog.Process.Kill()
		_ = c.watchdog.Wait()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove working directory: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("localcluster: stop: %w", errors.Join(errs...))
	}
	return nil
}

// childNetNSNames lists the namespaces that belong to the cluster by name: NetNS() followed by "-" (see
// Cluster.NetNS). Pods' namespaces are named so, and Stop and the watchdog remove them too.
func childNetNSNames(parent string) []string {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), parent+"-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// killNamespace sends SIGKILL to every process left in the namespace and waits (briefly) until none is
// left. Their parents reap them; we only make sure none survives.
func killNamespace(ns *netNS) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command(ns.ip, "netns", "pids", ns.name).Output()
		pids := strings.Fields(string(out))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, s := range pids {
			if pid, err := strconv.Atoi(s); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startWatchdog starts a shell that outlives this process if it dies without Stop (a panic, a test
// -timeout, kill -9): it then kills whatever still runs in the namespace and in the pods' namespaces (see
// childNetNSNames), deletes them all and removes the working directory. Pdeathsig already kills the
// components; the watchdog covers what Pdeathsig cannot: the namespaces' bind mounts and the files. It
// has its own process group so a Ctrl-C sent to the test's group does not end it first. Stop kills it.
func startWatchdog(ns *netNS, dir string) (*exec.Cmd, error) {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	// The namespace's name is [a-z0-9-] only (see prepare), so it can stand in a glob unquoted.
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done
for f in /run/netns/%[3]s-* /run/netns/%[3]s; do
  [ -e "$f" ] || continue
  for p in $(%[2]s netns pids "${f##*/}"); do kill -9 "$p"; done
done
sleep 1
for f in /run/netns/%[3]s-* /run/netns/%[3]s; do [ -e "$f" ] && %[2]s netns delete "${f##*/}"; done
rm -rf %[4]s`, os.Getpid(), q(ns.ip), ns.name, q(dir))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	return cmd, nil
}

// waitReadyz polls the apiserver's /readyz until it answers ok.
func (c *Cluster) waitReadyz(ctx context.Context, apiserver *process) error {
	return c.waitFor(ctx, "kube-apiserver /readyz", []*process{apiserver}, func(ctx context.Context) error {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return err
		}
		if string(body) != "ok" {
			return fmt.Errorf("answered %q", body)
		}
		return nil
	})
}

// waitDefaultServiceAccount waits for the ServiceAccount "default" in namespace "default", which the
// controller-manager's serviceaccount controller creates: proof that the controllers run. Pods cannot be
// created in a namespace before its default ServiceAccount exists, so callers need it anyway.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context, kcm *process) error {
	return c.waitFor(ctx, "ServiceAccount default/default", []*process{kcm}, func(ctx context.Context) error {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errors.New("not created yet")
		}
		return err
	})
}

// waitFor polls check until it succeeds. It fails early when any component exits, quoting that
// component's log, and on timeout quotes the logs of the components to blame.
func (c *Cluster) waitFor(ctx context.Context, what string, blame []*process, check func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		for _, p := range c.procs {
			if gone, why := p.exited(); gone {
				return fmt.Errorf("waiting for %s: %w\n%s", what, why, p.tail(30))
			}
		}
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			tails := make([]string, 0, len(blame))
			for _, p := range blame {
				tails = append(tails, p.tail(30))
			}
			return fmt.Errorf("waiting for %s: %w (last check: %w)\n%s", what, ctx.Err(), last,
				strings.Join(tails, "\n"))
		case <-tick.C:
		}
	}
}
