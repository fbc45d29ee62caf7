package node

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// StopNode simulates a power loss: every container process of the node's Pods gets SIGKILL, and the
// node stops renewing its Lease, posting status and reporting Pods, so kube-controller-manager's node
// lifecycle controller turns it NotReady (after its node-monitor-grace-period) and marks its Pods not
// ready. Sandboxes, addresses and volume contents survive, as disks survive a power loss.
func (a *Agent) StopNode(name string) error {
	n, err := a.node(name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	for _, w := range a.workersOf(name) {
		w.call(w.powerOff)
	}
	a.logf("node %s stopped", name)
	return nil
}

// StartNode powers the node back on: heartbeats resume at once and the Pods' containers start again
// according to their restart policy (without back-off, as after a reboot), in the same sandboxes.
func (a *Agent) StartNode(name string) error {
	n, err := a.node(name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.stopped = false
	n.mu.Unlock()
	for _, w := range a.workersOf(name) {
		w.call(func() {
			for _, c := range append(append([]*container{}, w.init...), w.containers...) {
				c.nextStart, c.backoff = time.Time{}, 0
			}
		})
	}
	n.wake()
	a.logf("node %s started", name)
	return nil
}

// Partition cuts the node off: every Pod's link goes down (processes keep running) and the node stops
// talking to the apiserver (no heartbeats, no status, no new Pods, deletions unseen) until Heal.
func (a *Agent) Partition(name string) error {
	return a.setPartitioned(name, true)
}

// Heal reverses Partition: links come back up, heartbeats resume at once and the node catches up with
// whatever happened to its Pods in the API meanwhile.
func (a *Agent) Heal(name string) error {
	return a.setPartitioned(name, false)
}

func (a *Agent) setPartitioned(name string, cut bool) error {
	n, err := a.node(name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.partitioned = cut
	n.mu.Unlock()
	var errs []error
	for _, w := range a.workersOf(name) {
		w.call(func() {
			if w.sandbox != nil {
				if err := w.sandbox.SetLinkUp(!cut); err != nil {
					errs = append(errs, fmt.Errorf("pod %s/%s: %w", w.ns, w.name, err))
				}
			}
		})
		w.wake()
	}
	n.wake()
	a.logf("node %s partitioned=%v", name, cut)
	return errors.Join(errs...)
}

// KillContainer sends sig to a running container's process, as a crash or an OOM kill would end it.
func (a *Agent) KillContainer(namespace, pod, containerName string, sig syscall.Signal) error {
	var err error
	found := a.withContainer(namespace, pod, containerName, func(c *container) {
		if c.proc == nil {
			err = fmt.Errorf("container %s of pod %s/%s is not running", containerName, namespace, pod)
			return
		}
		err = c.proc.Signal(sig)
	})
	if !found {
		return fmt.Errorf("no container %s in a pod %s/%s on this agent's nodes", containerName, namespace, pod)
	}
	return err
}

// ContainerPID returns the host pid of a running container's process, or 0 with an error.
func (a *Agent) ContainerPID(namespace, pod, containerName string) (int, error) {
	pid := 0
	found := a.withContainer(namespace, pod, containerName, func(c *container) {
		if c.proc != nil {
			pid = c.proc.Pid()
		}
	})
	if !found {
		return 0, fmt.Errorf("no container %s in a pod %s/%s on this agent's nodes", containerName, namespace, pod)
	}
	if pid == 0 {
		return 0, fmt.Errorf("container %s of pod %s/%s is not running", containerName, namespace, pod)
	}
	return pid, nil
}

// withContainer runs f on the worker's goroutine for the named container of the (live) Pod.
func (a *Agent) withContainer(namespace, pod, name string, f func(*container)) bool {
	found := false
	for _, w := range a.workersOf("") {
		if w.ns != namespace || w.name != pod {
			continue
		}
		w.call(func() {
			if w.term != nil {
				return // being deleted: a newer Pod of the same name may exist
			}
			for _, c := range append(append([]*container{}, w.init...), w.containers...) {
				if c.spec.Name == name {
					found = true
					f(c)
				}
			}
		})
	}
	return found
}

func (a *Agent) node(name string) (*nodeState, error) {
	n, ok := a.nodes[name]
	if !ok {
		return nil, fmt.Errorf("node agent: no node %q", name)
	}
	return n, nil
}
