// Package testenv runs a real kube-apiserver and etcd (controller-runtime's envtest) with this repository's
// CRDs installed, for tests that need API-server behaviour such as defaulting and CEL validation.
//
// The binaries come from $KUBEBUILDER_ASSETS when it is set, otherwise from <repo>/bin, which `make tools`
// fills. A missing binary fails the test; it never skips. Use Start for one test, or Run from TestMain to
// share one API server with every test of a package:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	etcdv1alpha1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// Env is a running API server with the CRDs installed.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client whose Scheme holds client-go's types and the EtcdCluster API.
	Client client.Client
	// Scheme is the Client's scheme.
	Scheme *runtime.Scheme

	env      *envtest.Environment
	watchdog *exec.Cmd
}

// Start starts an API server for one test and stops it when the test and its subtests finish. It calls
// t.Fatal when it cannot start, for example when a binary is missing.
func Start(t testing.TB) *Env {
	t.Helper()
	e, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	return e
}

// Run starts one API server, stores it in *env, runs the package's tests and stops the server. It returns
// the exit code for os.Exit: 1 when the server cannot start (the reason is printed) or cannot be stopped.
func Run(m *testing.M, env **Env) int {
	e, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Stop stops the API server and etcd and removes their temporary directories.
func (e *Env) Stop() error {
	err := e.env.Stop()
	if e.watchdog != nil && e.watchdog.Process != nil {
		_ = e.watchdog.Process.Kill()
		_ = e.watchdog.Wait()
		e.watchdog = nil
	}
	return err
}

func start() (*Env, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	binDir := os.Getenv("KUBEBUILDER_ASSETS")
	from := "$KUBEBUILDER_ASSETS"
	if binDir == "" {
		binDir, from = filepath.Join(root, "bin"), "the repository's bin directory"
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, fmt.Errorf("testenv: %s not found in %s (%s): run `make envtest-tools` at the repository root "+
				"to build it, or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd",
				name, binDir, from)
		}
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}

	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		UseExistingCluster:    &useExisting,
		Scheme:                scheme,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
			ErrorIfPathMissing: true,
		},
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	before := children()
	cfg, err := env.Start()
	e := &Env{Config: cfg, Scheme: scheme, env: env}
	e.watchdog = startWatchdog(before, env)
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("testenv: starting kube-apiserver and etcd from %s with the CRDs in config/crd/bases: %w", binDir, err)
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("testenv: creating client: %w", err)
	}
	return e, nil
}

// startWatchdog guards against leftover processes when the test binary dies without stopping the
// environment (a panic, a -timeout or a kill): a small shell process that waits for the test binary to exit,
// then kills the kube-apiserver and etcd processes this package started and removes their directories.
// envtest starts them in their own process groups, so they would otherwise outlive the test binary. It is
// best effort and Linux-only (it reads /proc); Stop kills it after the normal shutdown.
func startWatchdog(before map[int]bool, env *envtest.Environment) *exec.Cmd {
	var pids []string
	for pid := range children() {
		if !before[pid] {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	if len(pids) == 0 {
		return nil
	}
	var dirs []string
	if env.ControlPlane.APIServer != nil && env.ControlPlane.APIServer.CertDir != "" {
		dirs = append(dirs, strconv.Quote(env.ControlPlane.APIServer.CertDir))
	}
	if env.ControlPlane.Etcd != nil && env.ControlPlane.Etcd.DataDir != "" {
		dirs = append(dirs, strconv.Quote(env.ControlPlane.Etcd.DataDir))
	}
	if env.WebhookInstallOptions.LocalServingCertDir != "" {
		dirs = append(dirs, strconv.Quote(env.WebhookInstallOptions.LocalServingCertDir))
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -9 %s 2>/dev/null; sleep 1; rm -rf %s",
		os.Getpid(), strings.Join(pids, " "), strings.Join(dirs, " "))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // outlive a Ctrl-C sent to the test's group
	if err := cmd.Start(); err != nil {
		return nil
	}
	return cmd
}

// children returns the pids of this process's kube-apiserver and etcd child processes, read from /proc.
func children() map[int]bool {
	out := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		line, _, _ := strings.Cut(string(data), "\n")
		// Format: pid (comm) state ppid ...; comm may hold spaces and parentheses.
		open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
		if open < 0 || end < open {
			continue
		}
		comm, rest := line[open+1:end], strings.Fields(line[end+1:])
		if len(rest) < 2 || (comm != "kube-apiserver" && comm != "etcd") {
			continue
		}
		if ppid, _ := strconv.Atoi(rest[1]); ppid == self {
			out[pid] = true
		}
	}
	return out
}

// RunControllers starts the pinned kube-controller-manager (bin/kube-controller-manager) against this
// API server with only the named controllers, e.g. "garbagecollector", and stops it when the test ends.
// envtest has no controllers of its own; tests that need real garbage collection use this.
func (e *Env) RunControllers(t testing.TB, controllers ...string) {
	t.Helper()
	kcm := filepath.Join(e.env.BinaryAssetsDirectory, "kube-controller-manager")
	if _, err := os.Stat(kcm); err != nil {
		t.Fatalf("testenv: %s not found: run `make envtest-tools` to build it", kcm)
	}
	path := e.Kubeconfig(t, "kube-controller-manager")
	cmd := exec.Command(kcm, "--kubeconfig="+path, "--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false", "--secure-port=0", "--v=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: start kube-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// Kubeconfig writes a kubeconfig for a new cluster-admin user of this API server and returns its path,
// for running real clients such as kubectl or kube-controller-manager against it.
func (e *Env) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("testenv: add user %s: %v", user, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("testenv: kubeconfig for %s: %v", user, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl returns the path of the pinned kubectl next to the API server binaries.
func (e *Env) Kubectl(t testing.TB) string {
	t.Helper()
	p := filepath.Join(e.env.BinaryAssetsDirectory, "kubectl")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: %s not found: run `make envtest-tools` to build it", p)
	}
	return p
}
