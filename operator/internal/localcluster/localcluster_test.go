package localcluster

import (
	"context"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TestCluster starts a cluster, checks that each control-plane component does its job, stops it and
// checks that nothing is left behind. It needs root; it fails (never skips) without it.
func TestCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("localcluster tests must run as root: they create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hostBefore := hostNetSettings()

	// Resolve the binaries once, up front: kubectl is used from the same directory.
	binDir, err := resolveBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: t.TempDir(), BinDir: binDir}
	if os.Getenv("LOCALCLUSTER_LOG") != "" { // the components' own output; errors quote its tail anyway
		opts.Log = os.Stderr
	}
	begin := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	tm := c.Timings()
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("Start returned after %v: apiserver ready %v; kube-proxy and CoreDNS started %v, kube-proxy's rules "+
		"%v, CoreDNS answering %v, DNS through its ClusterIP %v; default ServiceAccount %v",
		ms(time.Since(begin)), ms(tm.APIServerReady), ms(tm.AddonsStarted), ms(tm.KubeProxyReady),
		ms(tm.CoreDNSReady), ms(tm.ClusterDNSReady), ms(tm.ControllersReady))
	t.Logf("from their own start: kube-proxy ready in %v, CoreDNS in %v", ms(tm.KubeProxyReady-tm.AddonsStarted),
		ms(tm.CoreDNSReady-tm.AddonsStarted))
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	dir, ns := c.Dir(), c.NetNS()
	cs := c.Client()

	checkNodeMonitor := startNodeMonitorProbe(ctx, t, cs)

	t.Run("confined to the namespace", func(t *testing.T) { testConfinement(t, c) })
	t.Run("kube-proxy's Node removed", func(t *testing.T) { testProxyNodeGone(ctx, t, cs) })
	t.Run("netfilter rules and forwarding only in the namespace", func(t *testing.T) { testNetfilterConfinement(t, c) })
	t.Run("kubernetes Service ClusterIP reaches the apiserver", func(t *testing.T) { testKubernetesServiceIP(ctx, t, c) })
	t.Run("cluster DNS", func(t *testing.T) { testClusterDNS(ctx, t, c) })
	t.Run("pod to Service to pod", func(t *testing.T) { testPodToServiceToPod(ctx, t, c) })
	t.Run("readyz", func(t *testing.T) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || string(body) != "ok" {
			t.Fatalf("/readyz: %q, %v", body, err)
		}
	})
	t.Run("kubectl through the loopback forwarder", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), "--kubeconfig="+c.Kubeconfig(),
			"get", "serviceaccount", "default", "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "serviceaccount/default" {
			t.Fatalf("kubectl: %v: %s", err, out)
		}
	})
	t.Run("scheduler binds a pod", func(t *testing.T) { testScheduling(ctx, t, cs) })
	t.Run("service gets a ClusterIP", func(t *testing.T) { testService(ctx, t, cs) })
	t.Run("garbage collector deletes dependents", func(t *testing.T) { testGC(ctx, t, cs) })
	t.Run("node without heartbeats turns Unknown quickly", checkNodeMonitor)

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	assertNothingLeft(t, dir, ns)
	if after := hostNetSettings(); !maps.Equal(after, hostBefore) {
		t.Errorf("machine-wide network settings changed: before %v, after %v", hostBefore, after)
	}
	if tables := hostNftTables(t); strings.Contains(tables, "kube-proxy") {
		t.Errorf("the machine's nftables hold a kube-proxy table after Stop:\n%s", tables)
	}
}

func testScheduling(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "Test"}},
			Allocatable: resources("4", "8Gi", "110"),
			Capacity:    resources("4", "8Gi", "110"),
		},
	}
	// Status is ignored on create, so set it with a status update as a kubelet would. The node lifecycle
	// controller may taint the new Node in between: retry on that conflict.
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Status = node.Status
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/none",
			Resources: corev1.ResourceRequirements{Requests: resources("100m", "64Mi", "")}}}},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var bound string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		bound = p.Spec.NodeName
		return err == nil && bound != "", nil
	})
	if err != nil || bound != "node-1" {
		t.Fatalf("pod not bound to node-1 by kube-scheduler (nodeName %q): %v", bound, err)
	}
}

func resources(cpu, mem, pods string) corev1.ResourceList {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	if pods != "" {
		l[corev1.ResourcePods] = resource.MustParse(pods)
	}
	return l
}

func testService(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"},
			Ports: []corev1.ServicePort{{Port: 80}}},
	}
	got, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR(serviceCIDR)
	if ip := net.ParseIP(got.Spec.ClusterIP); ip == nil || !cidr.Contains(ip) {
		t.Fatalf("ClusterIP %q not in %s", got.Spec.ClusterIP, serviceCIDR)
	}
	// No pod matches, so the EndpointSlice controller creates an empty slice: proof enough that it runs
	// (ready endpoints need a kubelet, which comes later).
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=s," + discoveryv1.LabelManagedBy + "=endpointslice-controller.k8s.io"})
		return err == nil && len(l.Items) > 0, nil
	})
	if err != nil {
		t.Fatalf("no EndpointSlice for Service s: %v", err)
	}
	// The apiserver publishes its own advertised address for the kubernetes Service: not loopback.
	k, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Endpoints) != 1 || len(k.Endpoints[0].Addresses) != 1 || k.Endpoints[0].Addresses[0] != apiserverIP {
		t.Fatalf("EndpointSlice default/kubernetes: %+v, want the single address %s", k.Endpoints, apiserverIP)
	}
}

func testGC(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	cms := cs.CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if _, err := cms.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("dependent ConfigMap not garbage-collected: %v", err)
	}
}

// testConfinement checks, without sending anything to a private address from the host namespace, that the
// cluster's addresses exist only inside its namespace and the host side listens on loopback only.
func testConfinement(t *testing.T, c *Cluster) {
	host, err := exec.Command("ip", "-o", "addr").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr: %v: %s", err, host)
	}
	if strings.Contains(string(host), apiserverIP+"/") {
		t.Errorf("%s is configured in the host namespace:\n%s", apiserverIP, host)
	}
	inside, err := c.Command("ip", "-o", "addr", "show", bridgeName).CombinedOutput()
	if err != nil || !strings.Contains(string(inside), apiserverIP+podCIDRPrefix) {
		t.Errorf("bridge inside the namespace lacks %s: %v: %s", apiserverIP, err, inside)
	}
	kubeconfig, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kubeconfig), "server: https://127.0.0.1:") {
		t.Errorf("host kubeconfig does not point at a loopback forwarder:\n%s", kubeconfig)
	}
}

// assertNothingLeft checks that no process mentions the cluster's directory and the namespace is gone.
func assertNothingLeft(t *testing.T, dir, ns string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			t.Errorf("process %s still runs: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	if strings.Contains(string(out), ns) {
		t.Errorf("network namespace %s still exists", ns)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("working directory %s still exists (%v)", dir, err)
	}
}
