package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/logtail"
)

// process is one control-plane component running inside the cluster's namespace. Its output goes to a
// log file in the cluster directory (read back for error messages) and, prefixed, to Options.Log.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed once Wait has returned
	waitErr error         // valid after done
}

// startProcess starts bin with args inside ns. It returns once the process runs; a goroutine reaps it, so
// exited() tells at any time whether it is gone.
func startProcess(ns *netNS, name, bin, logPath string, log io.Writer, args ...string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	cmd := ns.command(bin, args...)
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, &prefixWriter{w: log, prefix: "[" + name + "] "})
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, with the reason.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, fmt.Errorf("%s exited with status 0", p.name)
		}
		return true, fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	default:
		return false, nil
	}
}

// stop sends SIGTERM so the component shuts down cleanly, and SIGKILL if it has not ended within grace.
// It returns once the process has been reaped. Exit statuses after our own signal are not errors.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last lines of the process's log, for error messages.
func (p *process) tail(lines int) string {
	all, err := logtail.Lines(p.logPath, lines, 0)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return fmt.Sprintf("--- last %d lines of %s's log ---\n%s", len(all), p.name, strings.Join(all, "\n"))
}

// prefixWriter writes complete lines to w, each preceded by prefix, so the interleaved output of several
// components stays readable. One mutex for all writers keeps lines from different components whole.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

var logMu sync.Mutex

func (pw *prefixWriter) Write(b []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	pw.buf = append(pw.buf, b...)
	for {
		i := bytes.IndexByte(pw.buf, '\n')
		if i < 0 {
			break
		}
		// A failing log sink must not fail the component's own writes, so its error is dropped.
		_, _ = fmt.Fprintf(pw.w, "%s%s\n", pw.prefix, pw.buf[:i])
		pw.buf = pw.buf[i+1:]
	}
	return len(b), nil
}
