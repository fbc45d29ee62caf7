package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyAddonObjects creates what kube-proxy and CoreDNS need before they start: CoreDNS's Corefile and
// RBAC, the kube-dns Service with its EndpointSlice, and kube-proxy's Node. It retries until the apiserver
// takes them all: right after /readyz, the kube-system namespace or the default ServiceCIDR may still
// be on their way.
func (c *Cluster) applyAddonObjects(ctx context.Context, apiserver *process) error {
	if err := os.WriteFile(filepath.Join(c.dir, "Corefile"), []byte(coreDNSCorefile(c.dir)), 0o600); err != nil {
		return fmt.Errorf("write Corefile: %w", err)
	}
	role, binding := coreDNSRBAC()
	steps := []struct {
		what   string
		create func(context.Context) error
	}{
		{"ClusterRole " + role.Name, func(ctx context.Context) error {
			_, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRoleBinding " + binding.Name, func(ctx context.Context) error {
			_, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		}},
		{"Service kube-system/kube-dns", func(ctx context.Context) error {
			_, err := c.client.CoreV1().Services(kubeDNSService().Namespace).Create(ctx, kubeDNSService(), metav1.CreateOptions{})
			return err
		}},
		{"EndpointSlice kube-system/kube-dns", func(ctx context.Context) error {
			s := kubeDNSEndpointSlice()
			_, err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
			return err
		}},
		{"Node " + proxyNodeName, c.registerProxyNode},
	}
	for _, step := range steps {
		err := c.waitFor(ctx, "create "+step.what, []*process{apiserver}, func(ctx context.Context) error {
			if err := step.create(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// registerProxyNode creates kube-proxy's Node with its address (see proxyNodeName).
func (c *Cluster) registerProxyNode(ctx context.Context) error {
	nodes := c.client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, proxyNode(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // an earlier attempt created it but failed to set the status
		node, err = nodes.Get(ctx, proxyNodeName, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	node.Status = proxyNodeStatus()
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// waitKubeProxy waits until a TLS connection to the kubernetes Service's ClusterIP reaches the apiserver:
// kube-proxy has written its rules. Then kube-proxy's Node has served its purpose and goes.
func (c *Cluster) waitKubeProxy(ctx context.Context, proxy *process) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.caPEM)
	target := net.JoinHostPort(KubernetesServiceIP, strconv.Itoa(KubernetesServicePort))
	err := c.waitFor(ctx, "kube-proxy's rules for "+target, []*process{proxy}, func(ctx context.Context) error {
		// Short connection attempts: before the rules exist, a SYN to the ClusterIP waits for an ARP
		// answer that never comes, and each attempt's timeout adds to Start's time.
		dialCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		raw, err := c.ns.dialContext(dialCtx, "tcp", target)
		if err != nil {
			return err
		}
		defer func() { _ = raw.Close() }()
		// Verifying the apiserver's certificate for the ClusterIP proves the connection reached it.
		conn := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: KubernetesServiceIP, MinVersion: tls.VersionTLS12})
		return conn.HandshakeContext(ctx)
	})
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "delete Node "+proxyNodeName, nil, func(ctx context.Context) error {
		err := c.client.CoreV1().Nodes().Delete(ctx, proxyNodeName, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// waitDNS waits until the DNS server at server answers the kubernetes Service's name with its ClusterIP.
func (c *Cluster) waitDNS(ctx context.Context, server string, blame []*process) error {
	r := c.resolverAt(server)
	name := dnsName("kubernetes", metav1.NamespaceDefault)
	return c.waitFor(ctx, "DNS answer for "+name+" from "+server, blame, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, name)
		if err != nil {
			return err
		}
		if !slices.Equal(addrs, []string{KubernetesServiceIP}) {
			return fmt.Errorf("answered %v, want [%s]", addrs, KubernetesServiceIP)
		}
		return nil
	})
}

// waitServing waits, in parallel, for the stages that follow the apiserver's: kube-proxy's rules, CoreDNS,
// DNS through the kube-dns ClusterIP (which needs both) and the controllers. Each records its time in
// c.timings; they write different fields, read only after inParallel has returned.
func (c *Cluster) waitServing(ctx context.Context, begin time.Time, kcm, proxy, dns *process) error {
	// stage runs wait and, once it succeeds, records the time in *at.
	stage := func(at *time.Duration, wait func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := wait(ctx); err != nil {
				return err
			}
			*at = time.Since(begin)
			return nil
		}
	}
	viaService := net.JoinHostPort(DNSServiceIP, strconv.Itoa(dnsPort))
	direct := net.JoinHostPort(GatewayIP, strconv.Itoa(dnsPort))
	proxyReady := stage(&c.timings.KubeProxyReady, func(ctx context.Context) error {
		return c.waitKubeProxy(ctx, proxy)
	})
	clusterDNSReady := stage(&c.timings.ClusterDNSReady, func(ctx context.Context) error {
		return c.waitDNS(ctx, viaService, []*process{proxy, dns})
	})
	return inParallel(ctx,
		func(ctx context.Context) error { // the kube-dns ClusterIP answers only once kube-proxy's rules exist
			if err := proxyReady(ctx); err != nil {
				return err
			}
			return clusterDNSReady(ctx)
		},
		stage(&c.timings.CoreDNSReady, func(ctx context.Context) error {
			return c.waitDNS(ctx, direct, []*process{dns})
		}),
		stage(&c.timings.ControllersReady, func(ctx context.Context) error {
			return c.waitDefaultServiceAccount(ctx, kcm)
		}),
	)
}

// resolverAt returns a resolver that sends every query to server (host:port) from inside the namespace.
func (c *Cluster) resolverAt(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true, // the cgo resolver would ignore Dial and read the machine's resolv.conf
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return c.ns.dialContext(ctx, network, server)
		},
	}
}

// inParallel runs each function in its own goroutine and returns the first failure; the others then see
// their context cancelled.
func inParallel(ctx context.Context, fns ...func(context.Context) error) error {
	inner, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make(chan error, len(fns))
	for _, fn := range fns {
		go func() {
			err := fn(inner)
			if err != nil {
				cancel(err)
			}
			errs <- err
		}()
	}
	var first error
	for range fns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	// Report the failure that cancelled the others, not a "context canceled" that happened to arrive
	// first. When the caller's context ran out instead, every error says so and any will do.
	if first != nil && ctx.Err() == nil {
		return context.Cause(inner)
	}
	return first
}
