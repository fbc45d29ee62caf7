package podruntime

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Process is one running container. Its pid is the container's command itself (ip and podinit exec
// in place, they do not fork), so signals reach it directly.
type Process struct {
	cmd      *exec.Cmd
	specPath string // the InitSpec it was started from, reused by Exec
	done     chan struct{}
	status   ExitStatus // complete once done is closed
}

// Pid returns the container's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the container's process. It returns nil if the process has already ended.
func (p *Process) Signal(sig syscall.Signal) error {
	err := p.cmd.Process.Signal(sig) // uses a pidfd: never hits a recycled pid
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Done is closed once the process has ended and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Status tells how the process ended. It is valid after Done; before, only Started is set.
func (p *Process) Status() ExitStatus {
	select {
	case <-p.done:
		return p.status
	default:
		return ExitStatus{Started: p.status.Started}
	}
}

// reap waits for the process and records its exit status, then closes done.
func (p *Process) reap() {
	_ = p.cmd.Wait() // the exit status comes from ProcessState; a non-zero status is not our error
	p.status.Finished = time.Now()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.status.Signal = ws.Signal()
		p.status.Code = 128 + int(ws.Signal())
	} else {
		p.status.Code = p.cmd.ProcessState.ExitCode()
	}
	close(p.done)
}

// The parent-death signal (Pdeathsig) fires when the *thread* that forked a child ends, not the
// process. Go ends an OS thread when a goroutine locked to it returns, which other code in a test binary
// does (namespace-switching dialers give up a thread they cannot switch back), so a container forked
// from such a thread would be killed at a random time. Every fork of this package therefore runs on one
// thread that stays locked, and alive, until the process exits.
var (
	forkOnce  sync.Once
	forkQueue chan func()
)

// startOnForkThread runs cmd.Start on the dedicated fork thread.
func startOnForkThread(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forkQueue = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked and never returns: the thread lives as long as we do
			for f := range forkQueue {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forkQueue <- func() { errc <- cmd.Start() }
	return <-errc
}
