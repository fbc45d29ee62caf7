//go:build linux

package images

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/operator-registry/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// opmRun is the image's opm started as a container runtime would start it.
type opmRun struct {
	cmd    *exec.Cmd
	output *bytes.Buffer
	done   chan error
}

// startImageProcess runs the entrypoint and command of cfg chrooted into root (an extracted image),
// as uid:gid, from the image's working directory with its environment, in a new network namespace.
// The namespace is why this test may run opm at all: opm serve listens on ":<port>", every
// interface, and has no flag to bind an address; in a fresh namespace the only interface is a
// loopback that nothing outside can reach.
func startImageProcess(t *testing.T, root string, cfg v1.Config, uid, gid uint32, extraArgs ...string) *opmRun {
	t.Helper()
	argv := append(append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...), extraArgs...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.WorkingDir
	cmd.Env = cfg.Env
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		Cloneflags: syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	}
	r := &opmRun{cmd: cmd, output: out, done: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child ends, not the process, and a thread
		// ends when a goroutine locked to it (as inNetns's are) returns. Holding this thread until
		// the child exits keeps other goroutines off it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		r.done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %q in %s: %v", argv, root, err)
	}
	t.Cleanup(func() { r.stop(t) })
	if err := inNetns(cmd.Process.Pid, loopbackUp); err != nil {
		t.Fatalf("bring up loopback for opm: %v", err)
	}
	return r
}

// stop ends the process with SIGTERM, as the kubelet does, and fails if it does not exit in time.
func (r *opmRun) stop(t *testing.T) {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("opm did not exit within 10s of SIGTERM; output:\n%s", r.output)
	}
}

// imageUser resolves the image's USER against its /etc/passwd, as container runtimes do.
func imageUser(t *testing.T, root, user string) (uid, gid uint32) {
	t.Helper()
	name, group, hasGroup := strings.Cut(user, ":")
	f, err := os.Open(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatalf("image has no /etc/passwd: %v", err)
	}
	defer func() { _ = f.Close() }()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 4 && (fields[0] == name || fields[2] == name) {
			u, _ := strconv.ParseUint(fields[2], 10, 32)
			g, _ := strconv.ParseUint(fields[3], 10, 32)
			if hasGroup {
				g, _ = strconv.ParseUint(group, 10, 32)
			}
			return uint32(u), uint32(g)
		}
	}
	t.Fatalf("user %q is not in the image's /etc/passwd", user)
	return 0, 0
}

// TestOpmServesCatalogImage runs the catalog image's own /bin/opm with the image's entrypoint, command
// and user, chrooted into the extracted image, and asks it what OLM asks, over loopback in its own
// network namespace. It then runs it as an arbitrary UID in group 0 (OpenShift's restricted SCC),
// and against a changed catalog, which --cache-enforce-integrity must refuse. It needs root (chroot,
// setuid, network namespaces), as a container runtime does.
func TestOpmServesCatalogImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs opm the way a container runtime does (chroot, another user, a network " +
			"namespace) and needs root; run it as root or in a container")
	}
	_, img := fixtureCatalogImage(t)
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil { // the image's "/" for a non-root user
		t.Fatal(err)
	}
	if err := Extract(img, root, true); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, img).Config
	uid, gid := imageUser(t, root, cfg.User)
	for _, user := range []struct {
		name     string
		uid, gid uint32
	}{{"image user " + cfg.User, uid, gid}, {"arbitrary uid in group 0", 1000680000, 0}} {
		t.Run(user.name, func(t *testing.T) {
			run := startImageProcess(t, root, cfg, user.uid, user.gid, "-t", "/tmp/termination-log")
			conn, err := grpc.NewClient("passthrough:///127.0.0.1:50051",
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(netnsDialer(run.cmd.Process.Pid, 50051)))
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClientFromConn(conn)
			defer func() { _ = c.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			waitServing(t, ctx, c, run)
			checkCatalogServer(t, ctx, c, fixturePackage, "stable", fixtureCSV)
			// OLM v0 probes catalog Pods with `grpc_health_probe -addr=:50051`: run the image's own probe
			// inside the same root and network namespace, as the kubelet's exec probe would.
			probe := exec.CommandContext(ctx, "nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", run.cmd.Process.Pid), "--root="+root,
				fmt.Sprintf("--setuid=%d", user.uid), fmt.Sprintf("--setgid=%d", user.gid), CatalogProbePath, "-addr=:50051")
			if out, err := probe.CombinedOutput(); err != nil || !strings.Contains(string(out), "SERVING") {
				t.Errorf("grpc_health_probe in the catalog image: %v\n%s", err, out)
			}
			run.stop(t)
		})
	}

	t.Run("changed catalog", func(t *testing.T) {
		file := filepath.Join(root, "configs", fixturePackage, "catalog.yaml")
		data, _ := os.ReadFile(file)
		if err := os.WriteFile(file, bytes.Replace(data, []byte("test fixture"), []byte("changed"), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		run := startImageProcess(t, root, cfg, uid, gid, "-t", "/tmp/termination-log")
		select {
		case err := <-run.done:
			if err == nil || !strings.Contains(run.output.String(), "integrity check failed") {
				t.Errorf("opm exited with %v for a catalog that does not match its cache, want an integrity failure; output:\n%s", err, run.output)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("opm still runs 30s after start with a catalog that does not match its cache; output:\n%s", run.output)
		}
	})
}

// waitServing polls the health service until opm serves, failing early if opm exits.
func waitServing(t *testing.T, ctx context.Context, c *client.Client, run *opmRun) {
	t.Helper()
	for {
		if ok, err := c.HealthCheck(ctx, time.Second); ok && err == nil {
			return
		}
		select {
		case err := <-run.done:
			run.done <- err
			t.Fatalf("opm exited (%v) before serving; output:\n%s", err, run.output)
		case <-ctx.Done():
			t.Fatalf("opm not serving after 30s; output:\n%s", run.output)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
