package podruntime

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execOK runs argv in p and fails the test unless it exits with want.
func execCode(t *testing.T, s *Sandbox, p *Process, want int, argv ...string) string {
	t.Helper()
	out, code, err := s.Exec(context.Background(), p, argv)
	if err != nil || code != want {
		t.Fatalf("exec %q: code %d, err %v, want code %d; output:\n%s", argv, code, err, want, out)
	}
	return string(out)
}

// TestVolumesIdentityAndFiles checks what a container sees: its volumes (writable ones written as its
// user, read-only ones refusing writes), the given /etc/hosts, its user and groups, and that none of its
// mounts shows in the machine's mount namespace.
func TestVolumesIdentityAndFiles(t *testing.T) {
	rt, _ := newRuntime(t)
	s := createSandbox(t, rt, "uid-vol", "10.244.4.1", "pod-vol")
	host := t.TempDir()
	data, config, hosts := filepath.Join(host, "data"), filepath.Join(host, "config"), filepath.Join(host, "hosts")
	for _, err := range []error{
		os.Mkdir(data, 0o755), os.Chown(data, testUID, testGID),
		os.Mkdir(config, 0o777), os.WriteFile(filepath.Join(config, "cfg"), []byte("from-host"), 0o644),
		os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n10.244.4.1\tpod-vol custom-entry\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := srvContainer(t, "main", "write", "/data/from-container", "hello", ";", "sleep")
	c.Groups = []uint32{2000}
	c.WorkingDir = "/work/dir" // absent from the root: created
	c.Mounts = []Mount{
		{HostPath: hosts, ContainerPath: "/etc/hosts", ReadOnly: true},
		{HostPath: data, ContainerPath: "/data"},
		{HostPath: config, ContainerPath: "/config", ReadOnly: true}, // 0777 on the host: only the mount refuses
	}
	p := start(t, s, c)

	written := filepath.Join(data, "from-container")
	if err := eventually(5*time.Second, func() error { return checkOwned(written, "hello", testUID, testGID) }); err != nil {
		t.Fatal(err)
	}
	execCode(t, s, p, 0, "podtestsrv", "write", "/data/from-exec", "x")
	if err := checkOwned(filepath.Join(data, "from-exec"), "x", testUID, testGID); err != nil {
		t.Fatal(err)
	}

	if got, want := execCode(t, s, p, 0, "podtestsrv", "id"),
		"uid=1000 gid=1000 groups=[2000] hostname=pod-vol wd=/work/dir\n"; got != want {
		t.Errorf("id in the container: %q, want %q", got, want)
	}
	if got := execCode(t, s, p, 0, "podtestsrv", "cat", "/etc/hosts"); !strings.Contains(got, "custom-entry") {
		t.Errorf("/etc/hosts in the container is not the given one:\n%s", got)
	}
	if got := execCode(t, s, p, 0, "podtestsrv", "cat", "/config/cfg"); got != "from-host" {
		t.Errorf("/config/cfg = %q", got)
	}
	if got := execCode(t, s, p, 1, "podtestsrv", "write", "/config/new", "x"); !strings.Contains(got, "read-only file system") {
		t.Errorf("write to a read-only volume: %q, want a read-only file system error", got)
	}
	if got := execCode(t, s, p, 1, "podtestsrv", "write", "/etc/hosts", "x"); !strings.Contains(got, "read-only file system") {
		t.Errorf("write to the read-only /etc/hosts: %q", got)
	}
	if got := execCode(t, s, p, 0, "podtestsrv", "cat", "/etc/passwd"); !strings.Contains(got, "user1000:x:1000:1000:") {
		t.Errorf("/etc/passwd has no entry for the container's user:\n%s", got)
	}
	if _, err := os.Stat(hostCertsForTest); err == nil {
		execCode(t, s, p, 0, "podtestsrv", "cat", hostCertsForTest)
	}
	// The root holds only what podinit put there: no shell, no host files.
	execCode(t, s, p, 1, "podtestsrv", "cat", "/bin/sh")

	if m := mountsUnder(rt.cfg.Dir); len(m) > 0 {
		t.Errorf("container mounts visible in the machine's namespace: %v", m)
	}
	if m := mountsUnder(host); len(m) > 0 {
		t.Errorf("mounts under the volume directories: %v", m)
	}
}

const hostCertsForTest = "/etc/ssl/certs/ca-certificates.crt"

func checkOwned(path, content string, uid, gid uint32) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return err
	}
	if string(data) != content || st.Uid != uid || st.Gid != gid {
		return errors.New(path + ": unexpected content or owner: " + string(data))
	}
	return nil
}

// TestReadOnlyRoot: with readOnlyRootFilesystem the root and its /tmp refuse writes, even from root;
// a volume mounted at /tmp is writable.
func TestReadOnlyRoot(t *testing.T) {
	rt, _ := newRuntime(t)
	s := createSandbox(t, rt, "uid-ro", "10.244.5.1", "pod-ro")
	plain := srvContainer(t, "plain", "sleep")
	plain.UID, plain.GID, plain.ReadOnlyRoot = 0, 0, true
	p := start(t, s, plain)
	for _, path := range []string{"/tmp/x", "/x", "/etc/x"} {
		if got := execCode(t, s, p, 1, "podtestsrv", "write", path, "x"); !strings.Contains(got, "read-only file system") {
			t.Errorf("write %s: %q, want a read-only file system error", path, got)
		}
	}
	execCode(t, s, p, 0, "podtestsrv", "write", "/dev/shm/x", "x") // its own tmpfs stays writable

	withTmp := plain
	withTmp.Name = "with-tmp"
	withTmp.Mounts = []Mount{{HostPath: t.TempDir(), ContainerPath: "/tmp"}}
	p2 := start(t, s, withTmp)
	execCode(t, s, p2, 0, "podtestsrv", "write", "/tmp/x", "x")
	execCode(t, s, p2, 1, "podtestsrv", "write", "/x", "x")

	writable := plain
	writable.Name, writable.ReadOnlyRoot = "writable", false
	p3 := start(t, s, writable)
	execCode(t, s, p3, 0, "podtestsrv", "write", "/tmp/x", "x")
}

// TestExitStatus: SIGTERM and SIGKILL are reported as 128+signal, an exit code as itself.
func TestExitStatus(t *testing.T) {
	rt, _ := newRuntime(t)
	s := createSandbox(t, rt, "uid-sig", "10.244.6.1", "pod-sig")
	for _, tc := range []struct {
		name   string
		args   []string
		signal syscall.Signal
		code   int
	}{
		{"term", []string{"serve", ":8080"}, syscall.SIGTERM, 143},
		{"kill", []string{"sleep"}, syscall.SIGKILL, 137},
		{"exit", []string{"exit", "3"}, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := srvContainer(t, tc.name, tc.args...)
			c.Argv[0] = srvImagePath // an absolute command, not found through PATH
			p := start(t, s, c)
			if tc.signal != 0 {
				if err := p.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			st := waitDone(t, p, 5*time.Second)
			if st.Code != tc.code || st.Signal != tc.signal {
				t.Errorf("status %+v, want code %d signal %v", st, tc.code, tc.signal)
			}
			if st.Started.IsZero() || st.Finished.Before(st.Started) {
				t.Errorf("times: started %v finished %v", st.Started, st.Finished)
			}
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("signal after exit: %v, want nil", err)
			}
		})
	}
}

// TestStartFailures: a command that is not in the root fails Start with the reason, also in the log.
func TestStartFailures(t *testing.T) {
	rt, _ := newRuntime(t)
	s := createSandbox(t, rt, "uid-fail", "10.244.7.1", "pod-fail")
	c := srvContainer(t, "missing", "x")
	c.Argv[0] = "no-such-command"
	_, err := s.Start(c)
	if err == nil || !strings.Contains(err.Error(), "executable file not found in $PATH") {
		t.Fatalf("Start: %v, want a not-found error", err)
	}
	if log, _ := os.ReadFile(c.LogPath); !strings.Contains(string(log), "no-such-command") {
		t.Errorf("log does not say why: %q", log)
	}
	bad := srvContainer(t, "bad-mount", "sleep")
	bad.Mounts = []Mount{{HostPath: "/nonexistent/volume", ContainerPath: "/data"}}
	if _, err := s.Start(bad); err == nil || !strings.Contains(err.Error(), "/nonexistent/volume") {
		t.Fatalf("Start with a missing volume: %v", err)
	}
	// The namespace gone under the runtime's feet: ip fails before podinit runs.
	if out, err := exec.Command("ip", "netns", "delete", s.NetNS()).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := s.Start(srvContainer(t, "no-netns", "sleep")); err == nil || !strings.Contains(err.Error(), "podinit did not run") {
		t.Fatalf("Start without a namespace: %v", err)
	}
	if err := s.Delete(); err != nil {
		t.Fatalf("Delete after its namespace vanished: %v", err)
	}
}

// TestExec: output and exit code, a command not found, a context deadline, a container that ended.
func TestExec(t *testing.T) {
	rt, _ := newRuntime(t)
	s := createSandbox(t, rt, "uid-exec", "10.244.8.1", "pod-exec")
	p := start(t, s, srvContainer(t, "main", "sleep"))
	execCode(t, s, p, 7, "podtestsrv", "exit", "7")
	if got := execCode(t, s, p, 127, "nope"); !strings.Contains(got, "not found") {
		t.Errorf("exec of a missing command: %q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, _, err := s.Exec(ctx, p, []string{"podtestsrv", "sleep"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 2*time.Second {
		t.Errorf("exec past its deadline returned %v after %v", err, time.Since(begin))
	}

	begin = time.Now()
	for range 5 {
		execCode(t, s, p, 0, "podtestsrv", "id")
	}
	t.Logf("exec round trip: %v", time.Since(begin)/5)

	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p, 5*time.Second)
	if _, _, err := s.Exec(context.Background(), p, []string{"podtestsrv", "id"}); err == nil {
		t.Error("exec in an ended container succeeded")
	}
}
