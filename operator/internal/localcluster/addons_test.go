package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// testKubernetesServiceIP checks that the kubernetes Service's ClusterIP leads to the apiserver: an
// authenticated /readyz through it, from inside the namespace, answers ok.
func testKubernetesServiceIP(ctx context.Context, t *testing.T, c *Cluster) {
	cfg := c.RESTConfig()
	cfg.Host = "https://" + net.JoinHostPort(KubernetesServiceIP, strconv.Itoa(KubernetesServicePort))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz through %s: %q, %v", cfg.Host, body, err)
	}
}

// testClusterDNS resolves Service names and a headless Service's endpoint by hostname through the
// kube-dns ClusterIP, as a pod would.
func testClusterDNS(ctx context.Context, t *testing.T, c *Cluster) {
	r := c.Resolver()
	for name, want := range map[string]string{
		dnsName("kubernetes", "default"):   KubernetesServiceIP,
		dnsName("kube-dns", "kube-system"): DNSServiceIP,
	} {
		addrs, err := r.LookupHost(ctx, name)
		if err != nil || !slices.Equal(addrs, []string{want}) {
			t.Errorf("lookup %s: %v, %v; want [%s]", name, addrs, err, want)
		}
	}

	// A headless Service whose EndpointSlice names its endpoint "m0", as a StatefulSet's would: the
	// record etcd members find each other by.
	const ns, svc, ip = "dns-test", "peers", "10.244.5.5"
	cs := c.Client()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	headless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "peer", Port: 2380}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "localcluster-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Hostname: ptr.To("m0")}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("peer"), Port: ptr.To[int32](2380)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	member := "m0." + dnsName(svc, ns)
	var addrs []string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		addrs, err = r.LookupHost(ctx, member)
		return err == nil, nil
	})
	if err != nil || !slices.Equal(addrs, []string{ip}) {
		t.Fatalf("lookup %s: %v (%v); want [%s]", member, addrs, err, ip)
	}
	t.Logf("%s resolvable %v after its EndpointSlice was created", member, time.Since(created).Round(time.Millisecond))
	// A name that has no endpoint must be NXDOMAIN, not an error of the server: proof the answer above
	// came from the records and not from a catch-all.
	_, err = r.LookupHost(ctx, "m1."+dnsName(svc, ns))
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("lookup of a missing member: %v, want not found", err)
	}
}

// testPodToServiceToPod wires two pod-like namespaces to the bridge as a node agent would and checks the
// path pods depend on: a DNS query from a pod through the kube-dns ClusterIP, and a TCP connection from
// one pod through a Service's ClusterIP to the other pod, which sees it come from the gateway
// (--masquerade-all) so that its replies go back through the cluster namespace's conntrack.
func testPodToServiceToPod(ctx context.Context, t *testing.T, c *Cluster) {
	client := addPodNetNS(t, c, "ta", "10.244.9.1")
	server := addPodNetNS(t, c, "tb", "10.244.9.2")

	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return client.dialContext(ctx, network, net.JoinHostPort(DNSServiceIP, "53"))
	}}
	if addrs, err := r.LookupHost(ctx, dnsName("kubernetes", "default")); err != nil || !slices.Equal(addrs, []string{KubernetesServiceIP}) {
		t.Fatalf("DNS from a pod: %v, %v", addrs, err)
	}

	ln := listenInside(t, server, "tcp", "10.244.9.2:8080")
	peers := make(chan string, 16) // the source address of each connection the server pod accepts
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed by the test's cleanup
			}
			select {
			case peers <- conn.RemoteAddr().(*net.TCPAddr).IP.String():
			default:
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_, _ = io.Copy(conn, conn) // echo
			}()
		}
	}()
	svcIP := createEchoService(ctx, t, c.Client(), "10.244.9.2", 8080)
	created := time.Now()
	var conn net.Conn
	// Usually well under a second; the generous bounds are for two cores shared with other test packages.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, 500*time.Millisecond) // fails for want of ARP until the rules exist
		defer cancel()
		var err error
		conn, err = client.dialContext(attempt, "tcp", net.JoinHostPort(svcIP, "80"))
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("pod to Service %s:80: %v", svcIP, err)
		dumpProxyState(t, c, svcIP)
		t.FailNow()
	}
	defer func() { _ = conn.Close() }()
	t.Logf("new Service reachable through its ClusterIP %v after creation", time.Since(created).Round(time.Millisecond))
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("echo through the Service: %q, %v", buf, err)
	}
	if from := <-peers; from != GatewayIP {
		t.Fatalf("server pod saw a connection from %s, want the masqueraded %s", from, GatewayIP)
	}
}

func createEchoService(ctx context.Context, t *testing.T, cs kubernetes.Interface, podIP string, port int32) string {
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "echo", Port: 80, TargetPort: intstr.FromInt32(port)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Labels: map[string]string{
			discoveryv1.LabelServiceName: "echo", discoveryv1.LabelManagedBy: "localcluster-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("echo"), Port: ptr.To(port)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// addPodNetNS creates a namespace named after the cluster's (so Stop removes it even if the test does
// not) with a veth to the bridge, addr/16 and a default route via the gateway.
func addPodNetNS(t *testing.T, c *Cluster, suffix, addr string) *netNS {
	t.Helper()
	name := c.NetNS() + "-" + suffix
	host := "veth-" + suffix
	steps := [][]string{
		{"netns", "add", name},
		{"-n", c.NetNS(), "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", name},
		{"-n", c.NetNS(), "link", "set", host, "master", BridgeName, "up"},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "addr", "add", addr + podCIDRPrefix, "dev", "eth0"},
		{"-n", name, "link", "set", "eth0", "up"},
		{"-n", name, "route", "add", "default", "via", GatewayIP},
	}
	n := &netNS{name: name, ip: c.ns.ip}
	t.Cleanup(func() {
		if err := n.delete(); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	for _, args := range steps {
		if err := n.run(args...); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		t.Fatal(err)
	}
	n.fd = f
	return n
}

// listenInside opens a listening socket inside ns (the socket stays in the namespace it was created in).
func listenInside(t *testing.T, ns *netNS, network, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: Go discards the thread, which is in the wrong namespace
		if err := unix.Setns(int(ns.fd.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		ln, err := net.Listen(network, addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns.name, r.err)
	}
	t.Cleanup(func() { _ = r.ln.Close() })
	return r.ln
}

// testNetfilterConfinement checks that kube-proxy's table exists in the cluster's namespace and not in
// the machine's, and that forwarding is on inside only.
func testNetfilterConfinement(t *testing.T, c *Cluster) {
	inside, err := c.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
	if err != nil || !strings.Contains(string(inside), KubernetesServiceIP) {
		t.Errorf("kube-proxy's table in the namespace lacks the kubernetes Service (%v):\n%.2000s", err, inside)
	}
	if tables := hostNftTables(t); strings.Contains(tables, "kube-proxy") {
		t.Errorf("the machine's nftables hold a kube-proxy table:\n%s", tables)
	}
	fwd, err := c.Command("sysctl", "-n", "net.ipv4.ip_forward").CombinedOutput()
	if err != nil || strings.TrimSpace(string(fwd)) != "1" {
		t.Errorf("ip_forward inside the namespace: %q, %v", fwd, err)
	}
}

func hostNftTables(t *testing.T) string {
	out, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	return string(out)
}

// hostNetSettings reads machine-wide settings that kube-proxy would change if it were not confined or
// told to leave them alone; the test compares them before and after the cluster's life.
func hostNetSettings() map[string]string {
	got := map[string]string{}
	for _, path := range []string{
		"/proc/sys/net/ipv4/ip_forward",
		"/proc/sys/net/netfilter/nf_conntrack_max",
		"/sys/module/nf_conntrack/parameters/hashsize",
	} {
		data, err := os.ReadFile(path)
		got[path] = strings.TrimSpace(string(data)) + errString(err)
	}
	return got
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (%v)", err)
}

// testProxyNodeGone checks that kube-proxy's bootstrap Node was deleted before Start returned.
func testProxyNodeGone(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	_, err := cs.CoreV1().Nodes().Get(ctx, proxyNodeName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Node %s still exists after Start (%v)", proxyNodeName, err)
	}
}

// startNodeMonitorProbe registers a Node with one heartbeat and returns a check that waits for the node
// lifecycle controller to mark it Unknown. With the controller-manager's default 50 s grace period the
// check's deadline (35 s after the heartbeat) fails.
func startNodeMonitorProbe(ctx context.Context, t *testing.T, cs kubernetes.Interface) func(t *testing.T) {
	const name = "heartbeat-probe"
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{Unschedulable: true}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	beat := metav1.Now()
	// The node lifecycle controller taints a new Node at once: retry the status update on that conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: beat, LastTransitionTime: beat, Reason: "Test"}}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T) {
		var status corev1.ConditionStatus
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Until(beat.Add(35*time.Second)), true,
			func(ctx context.Context) (bool, error) {
				n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						status = c.Status
					}
				}
				return status == corev1.ConditionUnknown, nil
			})
		if err != nil {
			t.Fatalf("Node %s still Ready=%s 35 s after its only heartbeat: %v", name, status, err)
		}
		t.Logf("Node turned Ready=Unknown %v after its only heartbeat", time.Since(beat.Time).Round(time.Second))
	}
}

// helperEnv makes the test binary, re-run by TestKilledProcessLeavesNothing, start a cluster and wait to
// be killed instead of testing.
const helperEnv = "LOCALCLUSTER_TEST_HELPER"

// TestKilledProcessLeavesNothing starts a cluster (with a pod namespace) in a child test process, kills
// that process with SIGKILL, as a test -timeout or an OOM kill would, and checks that Pdeathsig and the
// watchdog remove every process, namespace and file.
func TestKilledProcessLeavesNothing(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		runHelperCluster()
		return
	}
	if os.Geteuid() != 0 {
		t.Fatal("localcluster tests must run as root: they create network namespaces")
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLeavesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The helper prints "<namespace> <working directory>" once its cluster is up.
	line := make([]byte, 512)
	n, err := out.Read(line)
	fields := strings.Fields(string(line[:n]))
	if err != nil || len(fields) != 2 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %q, %v\n%s", line[:n], err, stderr.String())
	}
	ns, dir := fields[0], fields[1]
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()

	// The watchdog polls every second and waits one more before deleting.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) {
			list, _ := exec.Command("ip", "netns", "list").CombinedOutput()
			_, statErr := os.Stat(dir)
			return !strings.Contains(string(list), ns) && os.IsNotExist(statErr), nil
		})
	if err != nil {
		list, _ := exec.Command("ip", "netns", "list").CombinedOutput()
		t.Fatalf("15 s after the kill, namespaces or %s remain:\n%s", dir, list)
	}
	t.Logf("everything gone %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	assertNothingLeft(t, dir, ns)
}

// runHelperCluster is the child's side: start a cluster in the directory the parent chose, add a pod
// namespace, report, and wait to be killed.
func runHelperCluster() {
	c, err := Start(context.Background(), Options{Dir: os.Getenv(helperEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pod := c.NetNS() + "-pod"
	if out, err := exec.Command("ip", "netns", "add", pod).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ip netns add %s: %v: %s\n", pod, err, out)
		os.Exit(1)
	}
	fmt.Printf("%s %s\n", c.NetNS(), c.Dir())
	select {}
}

// dumpProxyState logs what explains an unreachable Service: kube-proxy's rules for it, the Service's
// EndpointSlices, and the end of kube-proxy's log.
func dumpProxyState(t *testing.T, c *Cluster, svcIP string) {
	t.Helper()
	out, err := c.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
	var rules []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, svcIP) || strings.Contains(l, "10.244.9.") || strings.Contains(l, "echo") {
			rules = append(rules, strings.TrimSpace(l))
		}
	}
	t.Logf("kube-proxy's nftables rules about %s (err %v):\n%s", svcIP, err, strings.Join(rules, "\n"))
	slices, err := c.Client().DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err == nil {
		for _, es := range slices.Items {
			t.Logf("EndpointSlice %s labels %v endpoints %+v ports %+v", es.Name, es.Labels, es.Endpoints, es.Ports)
		}
	}
	if data, err := os.ReadFile(filepath.Join(c.Dir(), "logs", "kube-proxy.log")); err == nil {
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		t.Logf("kube-proxy log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}
