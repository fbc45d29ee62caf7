package podruntime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds the time from fork to the container's exec: building a root is a few dozen
// mounts, so only a hung mount (a dead network filesystem as a volume) could take this long.
const startTimeout = 30 * time.Second

// Sandbox is one Pod: a network namespace on the cluster bridge and the containers started in it.
type Sandbox struct {
	rt    *Runtime
	spec  SandboxSpec
	netns string // network namespace name, PodNetNSPrefix(cluster) + "p" + hash
	veth  string // host end of the veth, in the cluster namespace
	dir   string // root trees and InitSpecs of this sandbox's containers

	// life is held for reading while a process is being forked into the sandbox and for writing by
	// Delete, so Delete never misses a process that is just starting.
	life    sync.RWMutex
	deleted bool

	mu    sync.Mutex // guards seq and procs
	seq   int        // numbers container directories, so a restarted container gets a fresh root
	procs []*Process
}

// IP returns the Pod's address.
func (s *Sandbox) IP() netip.Addr { return s.spec.IP }

// NetNS returns the name of the sandbox's network namespace, as `ip netns` knows it.
func (s *Sandbox) NetNS() string { return s.netns }

// Start runs one container in the sandbox and returns once its command has been exec'd, or with the
// reason it could not be (also written to LogPath): a missing command, a bad mount.
func (s *Sandbox) Start(c ContainerSpec) (*Process, error) {
	if err := checkContainer(c); err != nil {
		return nil, fmt.Errorf("podruntime: sandbox %s: container %s: %w", s.spec.ID, c.Name, err)
	}
	s.life.RLock()
	defer s.life.RUnlock()
	if s.deleted {
		return nil, fmt.Errorf("podruntime: sandbox %s is deleted", s.spec.ID)
	}
	p, err := s.start(c)
	if err != nil {
		return nil, fmt.Errorf("podruntime: sandbox %s: container %s: %w", s.spec.ID, c.Name, err)
	}
	return p, nil
}

func checkContainer(c ContainerSpec) error {
	if c.Name == "" || strings.ContainsAny(c.Name, "/\x00") {
		return fmt.Errorf("invalid name %q", c.Name)
	}
	if !filepath.IsAbs(c.ImagePath) || c.LogPath == "" {
		return errors.New("ImagePath must be absolute and LogPath set")
	}
	info, err := os.Stat(c.Binary)
	if err != nil {
		return fmt.Errorf("binary: %w", err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("binary %q is not a regular file", c.Binary)
	}
	for _, m := range c.Mounts {
		if !filepath.IsAbs(m.ContainerPath) || filepath.Clean(m.ContainerPath) == "/" {
			return fmt.Errorf("mount %q: container path must be absolute and not /", m.ContainerPath)
		}
	}
	return nil
}

func (s *Sandbox) start(c ContainerSpec) (*Process, error) {
	s.mu.Lock()
	s.seq++
	dir := filepath.Join(s.dir, fmt.Sprintf("%s-%d", c.Name, s.seq))
	s.mu.Unlock()
	specPath, err := s.writeInitSpec(dir, c)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	defer func() { _ = syncR.Close() }()
	// ip netns exec joins the network namespace and unshares a mount namespace, then execs podinit in
	// place; the new UTS namespace carries the Pod's hostname.
	cmd := exec.Command(s.rt.ip, "netns", "exec", s.netns, s.rt.cfg.InitBinary, "run", specPath)
	cmd.Env = []string{} // podinit's own environment; the container's comes from the spec
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{syncW} // becomes SyncFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWUTS}
	p := &Process{cmd: cmd, specPath: specPath, done: make(chan struct{})}
	p.status.Started = time.Now()
	err = startOnForkThread(cmd)
	// The child holds its own copies. Ours of the sync pipe must go for end of file to arrive.
	_ = syncW.Close()
	_ = logFile.Close()
	if err != nil {
		return nil, fmt.Errorf("start podinit: %w", err)
	}
	go p.reap()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	if err := awaitExec(syncR, c.LogPath); err != nil {
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
		return nil, err
	}
	p.status.Started = time.Now()
	return p, nil
}

// awaitExec reads podinit's report (see SyncFD) and returns nil once the container's command has been
// exec'd.
func awaitExec(syncR *os.File, logPath string) error {
	_ = syncR.SetReadDeadline(time.Now().Add(startTimeout))
	msg, err := io.ReadAll(syncR)
	switch {
	case err != nil:
		return fmt.Errorf("waiting for podinit: %w", err)
	case len(msg) == 0 || msg[0] != SyncStarted:
		return fmt.Errorf("podinit did not run: %s", logTail(logPath))
	case len(msg) > 1:
		return errors.New(strings.TrimSpace(string(msg[1:])))
	}
	return nil
}

// logTail returns the end of a log for an error message.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	data = bytes.TrimSpace(data)
	if len(data) > 500 {
		data = data[len(data)-500:]
	}
	return string(data)
}

// writeInitSpec creates the container's directory with an empty root and writes its InitSpec there.
func (s *Sandbox) writeInitSpec(dir string, c ContainerSpec) (string, error) {
	root := filepath.Join(dir, "rootfs")
	// 0755: the root must be searchable by the container's user once it is "/".
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	c.Env = defaultEnv(c.Env, s.spec.Hostname, c.UID)
	data, err := json.Marshal(InitSpec{
		RootDir:   root,
		ParentPID: os.Getpid(),
		Hostname:  s.spec.Hostname,
		IP:        s.spec.IP,
		Container: c,
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "initspec.json")
	return path, os.WriteFile(path, data, 0o600)
}

// defaultEnv adds what container runtimes set when the image and the Pod do not: PATH, HOME, HOSTNAME.
func defaultEnv(env []string, hostname string, uid uint32) []string {
	has := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		has[k] = true
	}
	out := append([]string(nil), env...)
	add := func(k, v string) {
		if !has[k] {
			out = append(out, k+"="+v)
		}
	}
	add("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	add("HOSTNAME", hostname)
	if uid == 0 {
		add("HOME", "/root")
	} else {
		add("HOME", "/")
	}
	return out
}

// Delete kills every process of the sandbox, removes its network namespace and veth and its
// directories. Volume directories belong to the caller and are left alone. Calling it again does nothing.
func (s *Sandbox) Delete() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.deleted {
		return nil
	}
	s.deleted = true
	defer s.rt.forget(s)
	err := s.teardown()
	if err != nil {
		return fmt.Errorf("podruntime: delete sandbox %s: %w", s.spec.ID, err)
	}
	return nil
}

// teardown undoes CreateSandbox and every Start, in that order of safety: no process may hold a mount
// namespace whose mount points are about to be removed.
func (s *Sandbox) teardown() error {
	var errs []error
	if err := s.killAll(); err != nil {
		errs = append(errs, err)
	}
	if err := s.deleteNetwork(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 { // a survivor may still have the root trees mounted in its namespace
		return errors.Join(errs...)
	}
	if mounts := mountsUnder(s.dir); len(mounts) > 0 {
		// Only possible if mounts propagated back to our namespace; removing the tree would then delete
		// volume contents through them.
		return fmt.Errorf("mounts left under %s, not removing it: %s", s.dir, strings.Join(mounts, ", "))
	}
	return os.RemoveAll(s.dir)
}

// killAll sends SIGKILL to the tracked containers and to everything else inside the network namespace
// (exec'd commands and their children), until nothing is left there.
func (s *Sandbox) killAll() error {
	s.mu.Lock()
	procs := append([]*Process(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		_ = p.Signal(syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, err := s.rt.netnsPIDs(s.netns)
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survive SIGKILL", pids)
		}
		for _, pid := range pids {
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("container pid %d not reaped", p.Pid())
		}
	}
	return nil
}

// mountsUnder lists the mount points at or below dir in this process's mount namespace.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"(cannot read /proc/self/mountinfo: " + err.Error() + ")"}
	}
	var found []string
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	return found
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
