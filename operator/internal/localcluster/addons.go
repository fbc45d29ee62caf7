package localcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The cluster's add-ons: kube-proxy turns ClusterIPs into rules in the namespace's nftables, and CoreDNS
// answers for cluster.local. Both run as processes in the cluster's namespace like the control plane, and
// both only listen on addresses of that namespace.
const (
	// proxyNodeName is the Node kube-proxy says it runs on. kube-proxy waits up to 30 s at start-up for
	// its Node to exist and carry an address, so Start registers this Node (unschedulable) just long
	// enough for kube-proxy to read it, then deletes it: the Nodes left are those of the node agent.
	proxyNodeName    = "localcluster-proxy"
	kubeProxyHealthz = "127.0.0.1:10256"
	kubeProxyMetrics = "127.0.0.1:10249"

	// coreDNSUser is the user name in CoreDNS's client certificate; coreDNSRBAC grants it what the
	// kubernetes plugin reads. (Not "system:": that prefix belongs to Kubernetes' own identities.)
	coreDNSUser = "localcluster:coredns"
	// CoreDNS's HTTP endpoints, on the namespace's loopback and away from the ports other programs in the
	// namespace take without asking (OLM binds :8080 on every address).
	coreDNSHealth = "127.0.0.1:10054"
	coreDNSReady  = "127.0.0.1:10055"
	dnsPort       = 53

	// managedBy marks the objects Start creates by hand, such as kube-dns's EndpointSlice, so that no
	// controller mistakes them for its own.
	managedBy = "localcluster"
)

func kubeProxyArgs(dir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfigPath(dir, "kube-proxy"),
		"--proxy-mode=nftables",
		"--hostname-override=" + proxyNodeName,
		"--cluster-cidr=" + PodCIDR,
		// All pods share one bridge. Without SNAT, a pod's reply to a peer that reached it through a
		// ClusterIP would go straight back over the bridge, bypassing the namespace's conntrack, and
		// the peer would drop it (it came from the pod's address, not the ClusterIP).
		"--masquerade-all",
		// At most one rule sync per 100 ms instead of per second: the first sync and every new Service
		// wait out this period, and at this cluster's size a sync costs a few milliseconds. (The flag
		// says iptables but sets the period of every mode but ipvs.)
		"--iptables-min-sync-period=100ms",
		"--healthz-bind-address=" + kubeProxyHealthz,
		"--metrics-bind-address=" + kubeProxyMetrics,
		// nf_conntrack_max and the conntrack hash size are machine-wide: leave them alone. The
		// per-namespace timeouts can stay at the kernel's defaults too.
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		// The default -999 shields kube-proxy from the OOM killer, which a test process should not be.
		"--oom-score-adj=0",
		"--profiling=false",
	}
}

func coreDNSArgs(dir string) []string {
	return []string{"-conf=" + filepath.Join(dir, "Corefile")}
}

// coreDNSCorefile is CoreDNS's configuration. There is no cache plugin on purpose: a cached NXDOMAIN
// would outlive the moment a peer's record appears and slow down clusters whose members look each other
// up while they start. There is no forward plugin either: the namespace has no upstream resolver, so
// names outside the cluster domain get no answer.
func coreDNSCorefile(dir string) string {
	lines := []string{
		".:" + strconv.Itoa(dnsPort) + " {",
		"    bind " + GatewayIP,
		"    ready " + coreDNSReady,
		"    health " + coreDNSHealth,
		"    errors",
		"    # Only failed lookups: enough to debug a name that does not resolve, without a line per query.",
		"    log . {",
		"        class denial error",
		"    }",
		"    kubernetes " + ClusterDomain + " in-addr.arpa ip6.arpa {",
		"        kubeconfig " + kubeconfigPath(dir, "coredns"),
		"        pods insecure",
		"    }",
		"}",
	}
	return strings.Join(lines, "\n") + "\n"
}

// coreDNSRBAC lets CoreDNS's user list and watch what the kubernetes plugin serves records from.
func coreDNSRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: coreDNSUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: coreDNSUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: coreDNSUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: coreDNSUser}},
	}
	return role, binding
}

// kubeDNSService is the cluster DNS Service. It has no selector because CoreDNS is not a pod: its
// endpoint, the gateway address where CoreDNS listens, comes from kubeDNSEndpointSlice.
func kubeDNSService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: dnsPort},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: dnsPort},
			},
		},
	}
}

func kubeDNSEndpointSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   managedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{GatewayIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](dnsPort)},
			{Name: ptr.To("dns-tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](dnsPort)},
		},
	}
}

// proxyNode is kube-proxy's short-lived Node (see proxyNodeName). Its address is what kube-proxy takes
// as its node IP (for NodePorts); it is unschedulable and tainted so that no pod lands on it meanwhile.
func proxyNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: proxyNodeName, Labels: map[string]string{discoveryv1.LabelManagedBy: managedBy}},
		Spec: corev1.NodeSpec{
			Unschedulable: true,
			Taints:        []corev1.Taint{{Key: "localcluster/kube-proxy", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// proxyNodeStatus is set with a status update: the apiserver drops a Node's status on create.
func proxyNodeStatus() corev1.NodeStatus {
	return corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: GatewayIP}}}
}

// dnsName is the fully qualified name of a Service (trailing dot: no search domains apply).
func dnsName(service, namespace string) string {
	return fmt.Sprintf("%s.%s.svc.%s.", service, namespace, ClusterDomain)
}
