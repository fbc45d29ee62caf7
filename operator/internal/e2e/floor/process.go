package floor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/quorumkit/etcd-operator/operator/internal/logtail"
)

// process is one etcd process. A goroutine reaps it, so exited() can be asked at any time.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once Wait returned
	waitErr error         // valid after done
}

// startProcess runs binary with args, output appended to logPath. Pdeathsig kills it if the test process
// dies, so a crashed benchmark leaves no etcd behind. ETCD_* variables are removed from its environment:
// etcd reads them as flags and refuses to start when one repeats a command-line flag.
func startProcess(binary, logPath string, args []string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", logPath, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, and why.
func (p *process) exited() error {
	select {
	case <-p.done:
		reason := p.waitErr
		if reason == nil {
			reason = errors.New("exit status 0")
		}
		return fmt.Errorf("etcd (pid %d) exited: %w\n%s", p.pid(), reason, p.tail(15))
	default:
		return nil
	}
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *process) tail(lines int) string {
	all, err := logtail.Lines(p.logPath, lines, 0)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.logPath, strings.Join(all, "\n"))
}
