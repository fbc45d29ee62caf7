package node_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/node"
)

const etcdImage = "quay.io/coreos/etcd:v3.6.7"

// etcdPod is a single-member etcd listening on its pod IP, shaped like the operator's member Pods:
// non-root with fsGroup, read-only root, data on a volume, a readiness probe on /health, and
// $(VAR) references to downward API variables.
func etcdPod(name string, data corev1.VolumeSource) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "etcd"}},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: "peers",
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
				FSGroup: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true)},
			Containers: []corev1.Container{{
				Name: "etcd", Image: etcdImage, Command: []string{"/usr/local/bin/etcd"},
				Args: []string{"--name=$(POD_NAME)", "--data-dir=/var/lib/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://$(POD_IP):2379",
					"--listen-peer-urls=http://0.0.0.0:2380", "--initial-advertise-peer-urls=http://$(POD_IP):2380",
					"--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380", "--unsafe-no-fsync", "--log-level=warn"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "GREETING", Value: "hello $(POD_NAME)"},
				},
				Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/health", Port: intstr.FromString("client")}}, PeriodSeconds: 1, FailureThreshold: 3},
				// etcd serves grpc.health.v1 on its client port; the image holds nothing to exec but etcd.
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 2379}},
					InitialDelaySeconds: 2, PeriodSeconds: 2, FailureThreshold: 3},
				StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
					Command: []string{"/usr/local/bin/etcd", "--version"}}}, PeriodSeconds: 1, FailureThreshold: 10},
				SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: data}},
		},
	}
}

func emptyDir() corev1.VolumeSource {
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

func getPod(e *env, name string) (*corev1.Pod, error) {
	return e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func waitReady(t *testing.T, e *env, name string, timeout time.Duration) time.Duration {
	t.Helper()
	return waitFor(t, timeout, "pod "+name+" Ready", func() (bool, string) {
		p, err := getPod(e, name)
		if err != nil {
			return false, err.Error()
		}
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
}

func deletePod(t *testing.T, e *env, name string) {
	t.Helper()
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, 45*time.Second, "pod "+name+" gone", func() (bool, string) {
		_, err := getPod(e, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func testNodes(t *testing.T, e *env) {
	for i, name := range nodes {
		n, err := e.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("10.244.%d.0/24", i+1); n.Spec.PodCIDR != want {
			t.Errorf("%s podCIDR %q, want %q", name, n.Spec.PodCIDR, want)
		}
		if n.Labels["kubernetes.io/hostname"] != name || n.Labels["kubernetes.io/os"] != "linux" {
			t.Errorf("%s labels %v", name, n.Labels)
		}
		if cpu := n.Status.Allocatable.Cpu(); cpu.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("%s allocatable cpu %v", name, cpu)
		}
		if !nodeReady(n) {
			t.Errorf("%s not Ready: %+v", name, n.Status.Conditions)
		}
		lease, err := e.client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > 10*time.Second {
			t.Errorf("%s lease not renewed: %+v %v", name, lease, err)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testEtcdPod measures creation to Ready, then checks what the container sees (identity, env, token,
// /etc files) from the host through /proc, and that deletion stops it with SIGTERM well within grace.
func testEtcdPod(t *testing.T, e *env) {
	ctx := context.Background()
	begin := time.Now()
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, etcdPod("etcd-a", emptyDir()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var scheduled, running time.Duration
	ready := waitFor(t, 60*time.Second, "etcd-a Ready", func() (bool, string) {
		p, err := getPod(e, "etcd-a")
		if err != nil {
			return false, err.Error()
		}
		if scheduled == 0 && p.Spec.NodeName != "" {
			scheduled = time.Since(begin)
		}
		if running == 0 && p.Status.Phase == corev1.PodRunning {
			running = time.Since(begin)
		}
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue, fmt.Sprintf("%+v", p.Status)
	})
	t.Logf("etcd pod: creation to bound %v, to Running %v, to Ready %v", scheduled.Round(time.Millisecond),
		running.Round(time.Millisecond), ready.Round(time.Millisecond))

	p, err := getPod(e, "etcd-a")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.PodIP == "" || !strings.HasPrefix(p.Status.PodIP, "10.244.") || p.Status.HostIP != "10.244.0.1" ||
		p.Status.StartTime == nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("status: %+v", p.Status)
	}
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady} {
		if podCondition(p, c) != corev1.ConditionTrue {
			t.Errorf("condition %s is %q", c, podCondition(p, c))
		}
	}
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready || cs[0].Started == nil || !*cs[0].Started {
		t.Errorf("container status: %+v", cs)
	}
	pid, err := e.agent.ContainerPID("default", "etcd-a", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	checkProcess(t, pid, p)
	checkEvents(t, e, "etcd-a", "Pulled", "Created", "Started")

	// A steady Pod is not written again: the status patch is sent only on change, and probes that keep
	// succeeding change nothing. Three seconds cover several probe periods and the agent's re-check.
	rv := p.ResourceVersion
	time.Sleep(3 * time.Second)
	if p, err = getPod(e, "etcd-a"); err != nil || p.ResourceVersion != rv {
		t.Errorf("a steady pod was rewritten: resourceVersion %s -> %s (%v)", rv, p.ResourceVersion, err)
	}

	// Deletion: SIGTERM, etcd exits at once; the agent then deletes the object.
	begin = time.Now()
	deletePod(t, e, "etcd-a")
	gone := time.Since(begin)
	t.Logf("etcd pod: delete to object gone %v", gone.Round(time.Millisecond))
	if gone > 15*time.Second {
		t.Errorf("deletion took %v: etcd did not stop on SIGTERM (grace is 30 s)", gone)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("etcd (pid %d) still runs after its Pod is gone", pid)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.dir, p.Spec.NodeName, "pods")); len(entries) != 0 {
		t.Errorf("pod directories left behind: %v", entries)
	}
}

// checkProcess reads the container's identity, environment and files from the host.
func checkProcess(t *testing.T, pid int, p *corev1.Pod) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(status, []byte("\nUid:\t65532\t")) || !bytes.Contains(status, []byte("\nGid:\t65532\t")) {
		t.Errorf("container does not run as 65532:65532:\n%s", status)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			vars[k] = v
		}
	}
	for k, want := range map[string]string{"POD_NAME": "etcd-a", "POD_IP": p.Status.PodIP, "GREETING": "hello etcd-a",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1"} {
		if vars[k] != want {
			t.Errorf("env %s = %q, want %q", k, vars[k], want)
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !bytes.Contains(cmdline, []byte("--advertise-client-urls=http://"+p.Status.PodIP+":2379")) {
		t.Errorf("$(POD_IP) not expanded in args: %q", cmdline)
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	sa := root + "/var/run/secrets/kubernetes.io/serviceaccount/"
	tok, err := os.ReadFile(sa + "token")
	if err != nil {
		t.Fatalf("service-account token: %v", err)
	}
	claims := jwtClaims(t, string(tok))
	if !strings.Contains(claims, `"name":"etcd-a"`) || !strings.Contains(claims, `"uid":"`+string(p.UID)+`"`) {
		t.Errorf("token is not bound to the pod: %s", claims)
	}
	if ns, err := os.ReadFile(sa + "namespace"); err != nil || string(ns) != "default" {
		t.Errorf("namespace file: %q %v", ns, err)
	}
	if ca, err := os.ReadFile(sa + "ca.crt"); err != nil || !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("ca.crt: %v", err)
	}
	hosts, err := os.ReadFile(root + "/etc/hosts")
	if err != nil || !strings.Contains(string(hosts), p.Status.PodIP+"\tetcd-a.peers.default.svc.cluster.local\tetcd-a") {
		t.Errorf("/etc/hosts: %q %v", hosts, err)
	}
	resolv, err := os.ReadFile(root + "/etc/resolv.conf")
	if err != nil || !strings.Contains(string(resolv), "nameserver 10.96.0.10") ||
		!strings.Contains(string(resolv), "search default.svc.cluster.local svc.cluster.local cluster.local") {
		t.Errorf("/etc/resolv.conf: %q %v", resolv, err)
	}
	// readOnlyRootFilesystem: nothing but the volumes is writable. The data volume is (fsGroup, setgid).
	if err := os.WriteFile(root+"/probe-write", []byte("x"), 0o644); err == nil {
		t.Error("the root is writable despite readOnlyRootFilesystem")
	}
	info, err := os.Stat(root + "/var/lib/etcd")
	if st, ok := info.Sys().(*syscall.Stat_t); err != nil || !ok || st.Gid != 65532 || info.Mode()&os.ModeSetgid == 0 {
		t.Errorf("data volume not given to fsGroup 65532: %v %v", info.Mode(), err)
	}
	if _, err := os.Stat(root + "/var/lib/etcd/data/member"); err != nil {
		t.Errorf("etcd wrote no data in its volume: %v", err)
	}
}

func jwtClaims(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT: %q", tok)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, data)
	return compact.String()
}

func checkEvents(t *testing.T, e *env, pod string, reasons ...string) {
	t.Helper()
	waitFor(t, 10*time.Second, "events of "+pod, func() (bool, string) {
		list, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		for _, ev := range list.Items {
			if ev.Source.Component == "kubelet" {
				seen[ev.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, fmt.Sprintf("no %s event among %v", r, seen)
			}
		}
		return true, ""
	})
}

// testCrashLoop runs etcd with a bad flag: it exits at once, and the agent restarts it with back-off.
func testCrashLoop(t *testing.T, e *env) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: etcdImage,
			Command: []string{"/usr/local/bin/etcd", "--no-such-flag"}, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}},
	}
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sawBackOff := false
	took := waitFor(t, 60*time.Second, "three restarts", func() (bool, string) {
		p, err := getPod(e, "crasher")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		cs := p.Status.ContainerStatuses[0]
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		last := cs.LastTerminationState.Terminated
		return cs.RestartCount >= 3 && sawBackOff && last != nil && last.ExitCode != 0 && last.Reason == "Error" &&
			strings.Contains(last.Message, "no-such-flag"), fmt.Sprintf("%+v", cs)
	})
	t.Logf("crash loop: three restarts after %v (back-off 0 s, 1 s, 2 s)", took.Round(time.Millisecond))
	// Between a restart and the next crash the container runs (and, with no probe, counts as ready)
	// for a moment, so only the phase is stable: Running, since it will be restarted.
	if p, _ := getPod(e, "crasher"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("crash-looping pod: phase %s", p.Status.Phase)
	}
	if took < 3*time.Second { // the delays alone add up to 3 s
		t.Errorf("three restarts in %v: no back-off", took)
	}
	checkEvents(t, e, "crasher", "BackOff")

	// Force deletion: the object vanishes at once and the agent tears down what it finds no more.
	p, _ := getPod(e, "crasher")
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "crasher",
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(e.dir, p.Spec.NodeName, "pods", string(p.UID))
	waitFor(t, 10*time.Second, "force-deleted pod torn down", func() (bool, string) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}

// testLivenessFailure probes a port nothing listens on: the agent kills the container (SIGTERM) after
// failureThreshold failures and the restart policy brings it back.
func testLivenessFailure(t *testing.T, e *env) {
	pod := etcdPod("etcd-l", emptyDir())
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
		Port: intstr.FromInt32(9999)}}, PeriodSeconds: 1, FailureThreshold: 2}
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 60*time.Second, "restart after liveness failures", func() (bool, string) {
		p, err := getPod(e, "etcd-l")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		cs := p.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		// 143 = 128+SIGTERM: the kill was graceful (SIGKILL would be 137).
		return cs.RestartCount >= 1 && last != nil && last.ExitCode == 143, fmt.Sprintf("%+v", cs)
	})
	t.Logf("liveness failure: first restart after %v", took.Round(time.Millisecond))
	checkEvents(t, e, "etcd-l", "Unhealthy", "Killing")
	deletePod(t, e, "etcd-l")
}

func testUnknownImage(t *testing.T, e *env) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unknown-image", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/nope:1"}}},
	}
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "ImageNotInTable", func() (bool, string) {
		p, err := getPod(e, "unknown-image")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ImageNotInTable" && strings.Contains(w.Message, node.ImageTableFile) &&
			p.Status.Phase == corev1.PodPending, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0])
	})
	deletePod(t, e, "unknown-image")
}

func testUnsupported(t *testing.T, e *env) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "host-network", Namespace: "default"},
		Spec:       corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "etcd", Image: etcdImage}}},
	}
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "pod failed as unsupported", func() (bool, string) {
		p, err := getPod(e, "host-network")
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "UnsupportedByLocalcluster" &&
			strings.Contains(p.Status.Message, "hostNetwork"), fmt.Sprintf("%s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	deletePod(t, e, "host-network")
}

// testImageChange changes a running Pod's image (how the operator upgrades a member): the container is
// stopped gracefully and started again on the new image's binary, which then answers with its version.
func testImageChange(t *testing.T, e *env) {
	const oldImage = "quay.io/coreos/etcd:v3.5.21"
	pod := etcdPod("etcd-u", emptyDir())
	pod.Spec.Containers[0].Image = oldImage
	ctx := context.Background()
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, "etcd-u", 60*time.Second)
	p, err := getPod(e, "etcd-u")
	if err != nil {
		t.Fatal(err)
	}
	if v := etcdVersion(t, e, p.Status.PodIP); v != "3.5.21" {
		t.Fatalf("before the change etcd reports version %q, want 3.5.21", v)
	}
	p.Spec.Containers[0].Image = etcdImage
	if _, err := e.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 60*time.Second, "restart on the new image", func() (bool, string) {
		p, err := getPod(e, "etcd-u")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		cs := p.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		return cs.Image == etcdImage && cs.Ready && cs.RestartCount == 1 && last != nil && last.ExitCode == 143,
			fmt.Sprintf("%+v", cs)
	})
	t.Logf("image change: ready on the new image after %v", took.Round(time.Millisecond))
	if v := etcdVersion(t, e, p.Status.PodIP); v != "3.6.7" {
		t.Fatalf("after the image change etcd reports version %q, want 3.6.7", v)
	}
	checkEvents(t, e, "etcd-u", "Killing")
	deletePod(t, e, "etcd-u")
}

// etcdVersion asks the etcd server at ip for its version (GET /version on the client port).
func etcdVersion(t *testing.T, e *env, ip string) string {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: e.cluster.RESTConfig().Dial}}
	resp, err := hc.Get("http://" + net.JoinHostPort(ip, "2379") + "/version")
	if err != nil {
		t.Fatalf("etcd version at %s: %v", ip, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("etcd version at %s: %v", ip, err)
	}
	return v.Server
}
