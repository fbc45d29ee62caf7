package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"time"
)

// options are the operator's command-line settings.
type options struct {
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	leaseDuration    time.Duration
	clusterDomain    string
	imageRepository  string
	resync           time.Duration
	concurrency      int
	namespaces       []string
}

var (
	dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// An image repository without tag or digest: registry host, optional port, path.
	imageRepo = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)
)

// parseOptions reads flags (and WATCH_NAMESPACE, which OLM sets from the OperatorGroup) and checks
// each, naming the flag and the fix in every error.
func parseOptions(args []string, getenv func(string) string, out io.Writer) (options, error) {
	var o options
	var namespaces string
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; \"0\" disables it")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so that only one operator replica acts at a time")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's own)")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a new replica waits before taking over from one that died without releasing leadership")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "the Kubernetes cluster's DNS domain")
	fs.StringVar(&o.imageRepository, "etcd-image-repository", "quay.io/coreos/etcd", "repository of etcd images; the tag is v<spec.version>")
	fs.DurationVar(&o.resync, "resync-interval", 10*time.Second, "how often a settled cluster's health is checked again")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "how many clusters are reconciled at once")
	fs.StringVar(&namespaces, "watch-namespaces", "", "comma-separated namespaces to watch (default: WATCH_NAMESPACE, else all)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag, see --help", fs.Arg(0))
	}
	if namespaces == "" {
		namespaces = getenv("WATCH_NAMESPACE")
	}
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.namespaces = append(o.namespaces, ns)
		}
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	for _, a := range []struct{ flag, value string }{{"metrics-bind-address", o.metricsAddr}, {"health-probe-bind-address", o.probeAddr}} {
		if a.value == "0" && a.flag == "metrics-bind-address" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.value); err != nil {
			errs = append(errs, fmt.Errorf("--%s=%q is not host:port; use for example :8080", a.flag, a.value))
		}
	}
	if !dnsName.MatchString(o.clusterDomain) {
		errs = append(errs, fmt.Errorf("--cluster-domain=%q is not a DNS domain; use your cluster's domain, usually cluster.local", o.clusterDomain))
	}
	if !imageRepo.MatchString(o.imageRepository) {
		errs = append(errs, fmt.Errorf("--etcd-image-repository=%q must be a repository without tag or digest, for example quay.io/coreos/etcd", o.imageRepository))
	}
	if o.leaseDuration < 2*time.Second || o.leaseDuration > 5*time.Minute {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration=%s must be between 2s and 5m; the default 15s suits most clusters", o.leaseDuration))
	}
	if o.resync < time.Second {
		errs = append(errs, fmt.Errorf("--resync-interval=%s is below 1s; use for example 10s", o.resync))
	}
	if o.concurrency < 1 || o.concurrency > 64 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles=%d must be between 1 and 64", o.concurrency))
	}
	for _, ns := range o.namespaces {
		if len(ns) > 63 || !dnsName.MatchString(ns) || strings.Contains(ns, ".") {
			errs = append(errs, fmt.Errorf("--watch-namespaces (or WATCH_NAMESPACE) has %q, which is not a namespace name; list names separated by commas", ns))
		}
	}
	return errors.Join(errs...)
}
