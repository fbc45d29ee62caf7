package node

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DNSConfig is what a Pod's /etc/resolv.conf points at.
type DNSConfig struct {
	Server   netip.Addr // the cluster DNS Service's ClusterIP (10.96.0.10)
	Domain   string     // the cluster domain (cluster.local)
	Searches []string   // extra search domains after the cluster's own, as a host's resolv.conf would add
}

// podHostname is the Pod's hostname as the kubelet sets it.
func podHostname(pod *corev1.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	return pod.Name
}

// renderHosts renders a Pod's /etc/hosts: loopback names, the Pod's own address under its hostname (and
// its fully qualified name when it has a subdomain, which is how a StatefulSet-like member finds itself
// before DNS knows it), then spec.hostAliases.
func renderHosts(pod *corev1.Pod, ip netip.Addr, domain string) []byte {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file (localcluster node agent).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	host := podHostname(pod)
	if pod.Spec.Subdomain != "" {
		fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", host, pod.Spec.Subdomain, pod.Namespace, domain)
		fmt.Fprintf(&b, "%s\t%s\t%s\n", ip, fqdn, host)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", ip, host)
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return []byte(b.String())
}

// renderResolvConf renders a Pod's /etc/resolv.conf from its dnsPolicy and dnsConfig.
//
// ClusterFirst (the default) and ClusterFirstWithHostNet use the cluster DNS with the kubelet's search
// path and ndots:5. Default would inherit the node's resolver; the machine's resolver is not reachable
// from the pod network, so it gets the cluster DNS without search domains instead. None uses only
// dnsConfig. dnsConfig's nameservers and searches are appended, its options override by name.
func renderResolvConf(pod *corev1.Pod, dns DNSConfig) []byte {
	var servers, searches []string
	opts := map[string]*string{}
	var optOrder []string
	setOpt := func(name string, value *string) {
		if _, ok := opts[name]; !ok {
			optOrder = append(optOrder, name)
		}
		opts[name] = value
	}
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
	case corev1.DNSDefault:
		servers = append(servers, dns.Server.String())
	default: // ClusterFirst, ClusterFirstWithHostNet, empty
		servers = append(servers, dns.Server.String())
		searches = append(searches, pod.Namespace+".svc."+dns.Domain, "svc."+dns.Domain, dns.Domain)
		searches = append(searches, dns.Searches...)
		five := "5"
		setOpt("ndots", &five)
	}
	if c := pod.Spec.DNSConfig; c != nil {
		servers = append(servers, c.Nameservers...)
		for _, s := range c.Searches {
			if !slices.Contains(searches, s) {
				searches = append(searches, s)
			}
		}
		for _, o := range c.Options {
			setOpt(o.Name, o.Value)
		}
	}
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(optOrder) > 0 {
		parts := make([]string, 0, len(optOrder))
		for _, name := range optOrder {
			if v := opts[name]; v != nil {
				parts = append(parts, name+":"+*v)
			} else {
				parts = append(parts, name)
			}
		}
		fmt.Fprintf(&b, "options %s\n", strings.Join(parts, " "))
	}
	return []byte(b.String())
}
