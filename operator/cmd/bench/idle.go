package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
)

// idleFigures is the operator's steady load while it manages idle clusters.
type idleFigures struct {
	clusters         int
	apiPerMinute     float64 // requests to the Kubernetes API
	etcdPerMinute    float64 // requests to the etcd clusters
	rssBytes         int64   // resident memory at the end of the window
	window           time.Duration
	operatorRestarts int
}

// idleLoad creates n 3-member clusters, waits until all have settled, then reads the operator's request
// counters (its /metrics endpoint, from inside the cluster) at both ends of window, and its resident
// memory from /proc.
func (b *bench) idleLoad(ctx context.Context, n int, window time.Duration) error {
	progress("idle: creating %d 3-member clusters", n)
	for i := range n {
		if err := b.env.Create(ctx, harness.NewCluster(fmt.Sprintf("bench-idle-%d", i), "etcd", 3, newVersion, nil)); err != nil {
			return err
		}
	}
	for i := range n {
		if _, err := b.env.WaitSettled(ctx, fmt.Sprintf("bench-idle-%d", i), "etcd", 5*time.Minute); err != nil {
			return err
		}
	}
	pod, err := b.operatorPod(ctx)
	if err != nil {
		return err
	}
	progress("idle: %d clusters settled; measuring the operator (%s) for %s", n, pod.Name, window)
	api0, etcd0, err := b.scrape(ctx, pod.Status.PodIP)
	if err != nil {
		return err
	}
	begin := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	api1, etcd1, err := b.scrape(ctx, pod.Status.PodIP)
	if err != nil {
		return err
	}
	elapsed := time.Since(begin)
	pid, err := b.env.Cluster.Agent().ContainerPID(deploy.Namespace, pod.Name, deploy.Container)
	if err != nil {
		return err
	}
	rss, err := residentBytes(pid)
	if err != nil {
		return err
	}
	perMinute := func(d float64) float64 { return d / elapsed.Minutes() }
	b.idle = idleFigures{clusters: n, apiPerMinute: perMinute(api1 - api0), etcdPerMinute: perMinute(etcd1 - etcd0),
		rssBytes: rss, window: elapsed}
	if after, err := b.operatorPod(ctx); err == nil && after.Name == pod.Name {
		for _, cs := range after.Status.ContainerStatuses {
			b.idle.operatorRestarts += int(cs.RestartCount)
		}
	}
	return nil
}

func (b *bench) operatorPod(ctx context.Context) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := b.env.Client.List(ctx, &pods, client.InNamespace(deploy.Namespace)); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no running operator Pod in %s", deploy.Namespace)
}

// scrape sums the operator's Kubernetes API requests (client-go's rest_client_requests_total) and etcd
// requests (etcd_operator_etcd_requests_total) from its metrics endpoint.
func (b *bench) scrape(ctx context.Context, podIP string) (api, etcd float64, err error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: b.env.DialContext}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(podIP, "8080")+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("operator metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	return sumCounters(resp.Body)
}

// sumCounters adds up every sample of the two counters in Prometheus' text format.
func sumCounters(r io.Reader) (api, etcd float64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		target := (*float64)(nil)
		switch {
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			target = &api
		case strings.HasPrefix(line, "etcd_operator_etcd_requests_total{"):
			target = &etcd
		default:
			continue
		}
		fields := strings.Fields(line)
		v, perr := strconv.ParseFloat(fields[len(fields)-1], 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("metrics line %q: %w", line, perr)
		}
		*target += v
	}
	return api, etcd, sc.Err()
}

// residentBytes reads VmRSS of a process.
func residentBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
