package harness

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/logtail"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
)

// DumpLogs writes the last lines of every container log of the Pods in namespace ns and of the operator's
// Pods to w. The agent has no kubelet API (kubectl logs does not work), so the logs are read from the
// cluster's work directory, which Stop removes: a failing test calls this to keep what explains it.
func (e *Env) DumpLogs(ctx context.Context, w io.Writer, ns string, lines int) {
	var clusters etcdv1.EtcdClusterList
	if err := e.Client.List(ctx, &clusters, client.InNamespace(ns)); err == nil {
		for _, c := range clusters.Items {
			status, _ := yaml.Marshal(c.Status)
			_, _ = fmt.Fprintf(w, "----- EtcdCluster %s/%s generation %d status:\n%s", ns, c.Name, c.Generation, status)
		}
	}
	var events corev1.EventList
	if err := e.Client.List(ctx, &events, client.InNamespace(ns)); err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
		_, _ = fmt.Fprintf(w, "----- events in %s\n", ns)
		for _, ev := range events.Items {
			_, _ = fmt.Fprintf(w, "%s %s %s/%s %s: %s (x%d)\n", eventTime(&ev).Format("15:04:05.000"), ev.Type,
				ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message, max(ev.Count, 1))
		}
	}
	for _, namespace := range []string{deploy.Namespace, ns} {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			_, _ = fmt.Fprintf(w, "list pods in %s: %v\n", namespace, err)
			continue
		}
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
		for _, p := range pods.Items {
			files, _ := filepath.Glob(filepath.Join(e.Cluster.Dir(), "nodes", "*", "pods", string(p.UID), "logs", "*.log"))
			for _, f := range files {
				_, _ = fmt.Fprintf(w, "----- %s/%s %s (last %d lines)\n", namespace, p.Name, filepath.Base(f), lines)
				all, err := logtail.Lines(f, lines, 0)
				if err != nil {
					all = []string{err.Error()}
				}
				_, _ = fmt.Fprintln(w, strings.Join(all, "\n"))
			}
		}
	}
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
