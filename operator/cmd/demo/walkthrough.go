package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

const ns = "demo"

func walkthrough(ctx context.Context, c client.Client, root string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		return err
	}
	sample := filepath.Join(root, "config", "samples", "etcd_v1alpha1_etcdcluster.yaml")
	data, err := os.ReadFile(sample)
	if err != nil {
		return err
	}
	var cluster etcdv1.EtcdCluster
	if err := yaml.Unmarshal(data, &cluster); err != nil {
		return fmt.Errorf("%s: %w", sample, err)
	}
	cluster.Namespace = ns
	step("kubectl apply -f config/samples/etcd_v1alpha1_etcdcluster.yaml (namespace demo, restricted Pod Security)")
	fmt.Print(indent(string(data)))
	if err := c.Create(ctx, &cluster); err != nil {
		return err
	}
	if err := waitFor(ctx, func() bool { return len(listPods(ctx, c)) == 3 && cond(ctx, c, etcdv1.ConditionProgressing) != nil }); err != nil {
		return err
	}
	step("What the operator created: all three initial members at once, with a static --initial-cluster")
	for _, p := range listPods(ctx, c) {
		fmt.Printf("    pod/%s  image=%s  initial-cluster-state=%s\n", p.Name, p.Spec.Containers[0].Image,
			p.Annotations[etcdv1.AnnotationInitialState])
	}
	var svcs corev1.ServiceList
	_ = c.List(ctx, &svcs, client.InNamespace(ns))
	for _, s := range svcs.Items {
		fmt.Printf("    service/%s  clusterIP=%s  publishNotReadyAddresses=%t\n", s.Name, s.Spec.ClusterIP, s.Spec.PublishNotReadyAddresses)
	}
	var pdb policyv1.PodDisruptionBudget
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example"}, &pdb); err == nil {
		fmt.Printf("    poddisruptionbudget/%s  maxUnavailable=%s\n", pdb.Name, pdb.Spec.MaxUnavailable.String())
	}
	step("Its status (this API server has no nodes, so the Pods never run and the cluster stays Bootstrapping)")
	printConditions(ctx, c)
	printEvents(ctx, c)
	refusals(ctx, c)
	step("Next")
	fmt.Println(`    make test      runs every test: real etcd clusters, a real kube-apiserver, the planner's fuzz target
    README.md      the EtcdCluster fields, conditions, and how the operator decides each step`)
	return nil
}

// refusals sends bad specs and prints the API server's answers.
func refusals(ctx context.Context, c client.Client) {
	step("Bad specs are refused by the API server, each with the field and the fix")
	bad := map[string]func(*etcdv1.EtcdCluster){
		"size: 0":                         func(e *etcdv1.EtcdCluster) { e.Spec.Size = 0 },
		"version: 3.4.0":                  func(e *etcdv1.EtcdCluster) { e.Spec.Version = "3.4.0" },
		"version: 3.5.21 (a downgrade)":   func(e *etcdv1.EtcdCluster) { e.Spec.Version = "3.5.21" },
		"storage.kind: Persistent":        func(e *etcdv1.EtcdCluster) { e.Spec.Storage.Kind = etcdv1.StoragePersistent },
		"etcd.heartbeatIntervalMillis: 5": func(e *etcdv1.EtcdCluster) { v := int32(5); e.Spec.Etcd.HeartbeatIntervalMillis = &v },
	}
	for _, name := range []string{"size: 0", "version: 3.4.0", "version: 3.5.21 (a downgrade)", "storage.kind: Persistent", "etcd.heartbeatIntervalMillis: 5"} {
		var e etcdv1.EtcdCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example"}, &e); err != nil {
			fmt.Println("    ", err)
			return
		}
		bad[name](&e)
		fmt.Printf("    %s\n", name)
		err := c.Update(ctx, &e)
		var status apierrors.APIStatus
		switch {
		case err == nil:
			fmt.Println("        accepted (unexpected)")
		case errors.As(err, &status) && status.Status().Details != nil:
			for _, cause := range status.Status().Details.Causes {
				fmt.Printf("        refused: %s\n", cause.Message)
			}
		default:
			fmt.Printf("        refused: %v\n", err)
		}
	}
}

func listPods(ctx context.Context, c client.Client) []corev1.Pod {
	var pods corev1.PodList
	_ = c.List(ctx, &pods, client.InNamespace(ns))
	return pods.Items
}

func cond(ctx context.Context, c client.Client, t string) *metav1.Condition {
	var e etcdv1.EtcdCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example"}, &e); err != nil {
		return nil
	}
	for i := range e.Status.Conditions {
		if e.Status.Conditions[i].Type == t {
			return &e.Status.Conditions[i]
		}
	}
	return nil
}

func printConditions(ctx context.Context, c client.Client) {
	for _, t := range []string{etcdv1.ConditionAvailable, etcdv1.ConditionProgressing, etcdv1.ConditionDegraded} {
		if k := cond(ctx, c, t); k != nil {
			fmt.Printf("    %-11s %-5s %-16s %s\n", t, k.Status, k.Reason, k.Message)
		}
	}
}

func printEvents(ctx context.Context, c client.Client) {
	var evs eventsv1.EventList
	_ = c.List(ctx, &evs, client.InNamespace(ns))
	for _, e := range evs.Items {
		fmt.Printf("    event %-8s %-16s %s\n", e.Type, e.Reason, e.Note)
	}
}

func waitFor(ctx context.Context, done func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for the operator")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n"
}
