package podruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// execWaitDelay is how long Exec waits for the output pipe to close after its command ended or was
// killed: a background child of the command may hold it open, and must not hold up a probe.
const execWaitDelay = 500 * time.Millisecond

// Exec runs argv inside p's namespaces, in its root, working directory and identity (user, groups,
// environment), as an exec probe or `kubectl exec` would, and returns its combined stdout and stderr and
// its exit code. A non-zero exit is not an error; err is set when the command could not be run or ctx
// ended first (it is then killed).
func (s *Sandbox) Exec(ctx context.Context, p *Process, argv []string) ([]byte, int, error) {
	if len(argv) == 0 {
		return nil, -1, errors.New("podruntime: exec: empty command")
	}
	// nsenter (C, single-threaded) joins the container's mount, network and UTS namespaces, which a
	// Go process cannot do for the mount namespace; podinit then chroots to the container's root, which
	// stays visible at its host path in that namespace, takes the container's identity and execs argv.
	args := append([]string{
		"--target", strconv.Itoa(p.Pid()), "--mount", "--net", "--uts", "--",
		s.rt.cfg.InitBinary, "exec", p.specPath, "--",
	}, argv...)
	cmd := exec.CommandContext(ctx, s.rt.nsenter, args...)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = execWaitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.startExec(p, cmd); err != nil {
		return nil, -1, fmt.Errorf("podruntime: exec in sandbox %s: %w", s.spec.ID, err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		return out.Bytes(), -1, fmt.Errorf("podruntime: exec %q: %w", argv[0], ctx.Err())
	}
	select {
	case <-p.done: // nsenter found no namespaces to join: the container ended meanwhile
		return out.Bytes(), -1, fmt.Errorf("podruntime: exec %q: container has exited", argv[0])
	default:
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return out.Bytes(), 128 + int(ws.Signal()), nil
		}
		return out.Bytes(), exitErr.ExitCode(), nil
	case err != nil:
		return out.Bytes(), -1, fmt.Errorf("podruntime: exec %q: %w", argv[0], err)
	}
	return out.Bytes(), 0, nil
}

// startExec forks the exec command unless the sandbox is being deleted or the container has ended.
func (s *Sandbox) startExec(p *Process, cmd *exec.Cmd) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.deleted {
		return errors.New("sandbox is deleted")
	}
	select {
	case <-p.done:
		return errors.New("container has exited")
	default:
	}
	return startOnForkThread(cmd)
}
