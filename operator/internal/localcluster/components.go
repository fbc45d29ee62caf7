package localcluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Addresses of the cluster, for callers that wire pods into its network. They are private-range
// addresses and exist only inside the cluster's own network namespace, never in the machine's.
const (
	// BridgeName is the bridge inside the namespace that pods' veths join.
	BridgeName = "br0"
	// GatewayIP is the bridge's address: the pods' default gateway, and where the apiserver and the
	// cluster DNS server listen.
	GatewayIP = "10.244.0.1"
	// PodCIDR is the pod network; GatewayIP holds its first address.
	PodCIDR = "10.244.0.0/16"
	// ServiceCIDR is where ClusterIPs come from; kube-proxy routes them inside the namespace.
	ServiceCIDR = "10.96.0.0/16"
	// KubernetesServiceIP and KubernetesServicePort are the "kubernetes" Service: what pods get as
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT. The apiserver's certificate covers the IP.
	KubernetesServiceIP   = "10.96.0.1"
	KubernetesServicePort = 443
	// DNSServiceIP is the ClusterIP of the kube-dns Service in kube-system: the nameserver of pods'
	// resolv.conf. ClusterDomain is the DNS suffix of Services and pods (<svc>.<ns>.svc.cluster.local).
	DNSServiceIP  = "10.96.0.10"
	ClusterDomain = "cluster.local"
)

// Internal names of the same addresses, and the control plane's own endpoints.
const (
	bridgeName    = BridgeName
	apiserverIP   = GatewayIP
	podCIDRPrefix = "/16" // the bridge holds GatewayIP with PodCIDR's prefix length
	serviceCIDR   = ServiceCIDR
	kubernetesSvc = KubernetesServiceIP
	apiserverPort = 6443
	etcdClientURL = "http://127.0.0.1:2379" // loopback of the cluster's namespace, not the machine's
	etcdPeerURL   = "http://127.0.0.1:2380"
	saIssuer      = "https://kubernetes.default.svc." + ClusterDomain
)

// apiserverURL is the apiserver's address as seen from inside the namespace.
func apiserverURL() string {
	return "https://" + net.JoinHostPort(apiserverIP, strconv.Itoa(apiserverPort))
}

// apiserverSANs are the addresses the serving certificate covers: the advertised one, the kubernetes
// Service's ClusterIP (for pods, once kube-proxy exists) and loopback (for the host-side forwarder).
func apiserverSANs() []net.IP {
	return []net.IP{net.ParseIP(apiserverIP), net.ParseIP(kubernetesSvc), net.ParseIP("127.0.0.1")}
}

func etcdArgs(dir string) []string {
	return []string{
		"--name=default",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdClientURL,
		"--advertise-client-urls=" + etcdClientURL,
		"--listen-peer-urls=" + etcdPeerURL,
		"--initial-advertise-peer-urls=" + etcdPeerURL,
		"--initial-cluster=default=" + etcdPeerURL,
		// The control plane's store lives only as long as the cluster; skipping fsync makes every API
		// write cheaper and cannot lose anything that matters.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

func apiserverArgs(dir string) []string {
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	return []string{
		"--advertise-address=" + apiserverIP, // EndpointSlices reject loopback addresses
		"--bind-address=" + apiserverIP,
		"--secure-port=" + strconv.Itoa(apiserverPort),
		"--etcd-servers=" + etcdClientURL,
		"--cert-dir=" + pki(""), // never fall back to /var/run/kubernetes
		"--tls-cert-file=" + pki(apiserverCert),
		"--tls-private-key-file=" + pki(apiserverKey),
		"--client-ca-file=" + pki(caCert),
		"--token-auth-file=" + pki(tokenFile),
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + saIssuer,
		"--service-account-key-file=" + pki(saPub),
		"--service-account-signing-key-file=" + pki(saKey),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		// The aggregation layer (for package-server and metrics later) authenticates the apiserver's
		// proxied requests with these.
		"--requestheader-client-ca-file=" + pki(frontProxyCA),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki(proxyClientCert),
		"--proxy-client-key-file=" + pki(proxyClientKey),
		"--profiling=false",
	}
}

func controllerManagerArgs(dir string) []string {
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	return []string{
		"--kubeconfig=" + kubeconfigPath(dir, "kube-controller-manager"),
		"--controllers=*", // garbage collector, token controllers, endpoint slices, node lifecycle, ...
		"--leader-elect=false",
		"--secure-port=0", // serve nothing: no port to confine
		"--service-account-private-key-file=" + pki(saKey),
		"--root-ca-file=" + pki(caCert),
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file=" + pki(caCert),
		"--cluster-signing-key-file=" + pki(caKey),
		"--cluster-name=localcluster",
		// Tests stop a node agent's heartbeats to simulate a lost machine; the defaults (5 s, 50 s) would
		// make each such test wait most of a minute before the Node turns NotReady. 16 s still spans
		// several missed 4-5 s lease renewals, so a busy machine does not flap Nodes.
		"--node-monitor-period=2s",
		"--node-monitor-grace-period=16s",
		// Start-up creates a ServiceAccount and token per controller; the default 20 QPS throttles it.
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		"--profiling=false",
	}
}

func schedulerArgs(dir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfigPath(dir, "kube-scheduler"),
		"--leader-elect=false",
		"--secure-port=0",
		"--profiling=false",
	}
}

// writeComponentKubeconfigs writes a kubeconfig per client identity (see clientIdentities): each reaches the
// apiserver at its address inside the namespace with its client certificate.
func writeComponentKubeconfigs(dir string) error {
	for _, id := range clientIdentities {
		auth := &clientcmdapi.AuthInfo{
			ClientCertificate: filepath.Join(dir, "pki", id.file+".crt"),
			ClientKey:         filepath.Join(dir, "pki", id.file+".key"),
		}
		if err := writeKubeconfig(kubeconfigPath(dir, id.file), apiserverURL(), filepath.Join(dir, "pki", caCert), auth); err != nil {
			return err
		}
	}
	return nil
}

func kubeconfigPath(dir, component string) string { return filepath.Join(dir, component+".kubeconfig") }

func writeKubeconfig(path, server, caFile string, auth *clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["localcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos["user"] = auth
	cfg.Contexts["localcluster"] = &clientcmdapi.Context{Cluster: "localcluster", AuthInfo: "user"}
	cfg.CurrentContext = "localcluster"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
