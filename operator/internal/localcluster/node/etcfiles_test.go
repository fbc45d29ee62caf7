package node

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

var testDNS = DNSConfig{Server: netip.MustParseAddr("10.96.0.10"), Domain: "cluster.local"}

func TestRenderHosts(t *testing.T) {
	pod := testPod()
	pod.Spec.Hostname, pod.Spec.Subdomain = "demo-0", "demo-peer"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.244.9.9", Hostnames: []string{"a.example", "b.example"}}}
	got := string(renderHosts(pod, netip.MustParseAddr("10.244.1.7"), "cluster.local"))
	want := `# Kubernetes-managed hosts file (localcluster node agent).
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
10.244.1.7	demo-0.demo-peer.db.svc.cluster.local	demo-0

# Entries added by HostAliases.
10.244.9.9	a.example	b.example
`
	if got != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}
	plain := testPod()
	if got := string(renderHosts(plain, netip.MustParseAddr("10.244.1.8"), "cluster.local")); got !=
		"# Kubernetes-managed hosts file (localcluster node agent).\n127.0.0.1\tlocalhost\n"+
			"::1\tlocalhost ip6-localhost ip6-loopback\n10.244.1.8\tdemo-0\n" {
		t.Errorf("hosts without subdomain:\n%s", got)
	}
}

func TestRenderResolvConf(t *testing.T) {
	dns := testDNS
	dns.Searches = []string{"corp.example"}
	for name, tc := range map[string]struct {
		policy corev1.DNSPolicy
		config *corev1.PodDNSConfig
		want   string
	}{
		"default policy": {"", nil, "search db.svc.cluster.local svc.cluster.local cluster.local corp.example\n" +
			"nameserver 10.96.0.10\noptions ndots:5\n"},
		"dnsConfig merges": {corev1.DNSClusterFirst, &corev1.PodDNSConfig{Nameservers: []string{"1.2.3.4"},
			Searches: []string{"cluster.local", "x.example"},
			Options:  []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
			"search db.svc.cluster.local svc.cluster.local cluster.local corp.example x.example\n" +
				"nameserver 10.96.0.10\nnameserver 1.2.3.4\noptions ndots:2 edns0\n"},
		"None":    {corev1.DNSNone, &corev1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}}, "nameserver 1.2.3.4\n"},
		"Default": {corev1.DNSDefault, nil, "nameserver 10.96.0.10\n"},
	} {
		pod := testPod()
		pod.Spec.DNSPolicy, pod.Spec.DNSConfig = tc.policy, tc.config
		if got := string(renderResolvConf(pod, dns)); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, tc.want)
		}
	}
}
