package podruntime

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// TestEtcdInPod runs the repository's real etcd as a container, the way the operator's Pods will run:
// unprivileged, data on a volume, reached on the Pod's IP; SIGTERM reaches etcd itself.
func TestEtcdInPod(t *testing.T) {
	etcd := filepath.Join(repoRootForTest(t), "bin", "etcd")
	if _, err := os.Stat(etcd); err != nil {
		t.Skipf("no %s (scripts/build-tool.sh etcd ...): %v", etcd, err)
	}
	rt, cluster := newRuntime(t)
	s := createSandbox(t, rt, "uid-etcd", "10.244.11.1", "etcd-0")
	data := t.TempDir()
	if err := os.Chown(data, testUID, testGID); err != nil {
		t.Fatal(err)
	}
	const ip = "10.244.11.1"
	begin := time.Now()
	c := ContainerSpec{
		Name: "etcd", Binary: etcd, ImagePath: "/usr/local/bin/etcd",
		Argv: []string{"etcd", "--name=etcd-0", "--data-dir=/var/lib/etcd/data",
			"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://" + ip + ":2379",
			"--listen-peer-urls=http://" + ip + ":2380", "--initial-advertise-peer-urls=http://" + ip + ":2380",
			"--initial-cluster=etcd-0=http://" + ip + ":2380"},
		UID: testUID, GID: testGID,
		Mounts:  []Mount{{HostPath: data, ContainerPath: "/var/lib/etcd"}},
		LogPath: filepath.Join(t.TempDir(), "etcd.log"),
	}
	p := start(t, s, c)
	var health string
	if err := eventually(20*time.Second, func() error {
		var err error
		health, err = getFromCluster(cluster, "http://"+ip+":2379/health")
		return err
	}); err != nil || !strings.Contains(health, `"health":"true"`) {
		log, _ := os.ReadFile(c.LogPath)
		t.Fatalf("etcd health: %q, %v\n%s", health, err, log)
	}
	t.Logf("etcd in a pod healthy %v after Start", time.Since(begin))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(data, "data"), &st); err != nil || st.Uid != testUID {
		t.Errorf("etcd data directory: uid %d, %v; want written as uid %d", st.Uid, err, testUID)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	status := waitDone(t, p, 10*time.Second)
	t.Logf("etcd after SIGTERM: %+v", status)
	// etcd handles SIGTERM: it shuts down and re-raises the signal, so the status names SIGTERM.
	if status.Signal != syscall.SIGTERM && status.Code != 0 {
		t.Errorf("etcd did not shut down on SIGTERM: %+v", status)
	}
}

func repoRootForTest(t *testing.T) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
