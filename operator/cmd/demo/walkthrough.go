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
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
)

const ns = "demo"

func walkthrough(ctx context.Context, env *harness.Env) error {
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		return err
	}
	sample := filepath.Join(env.Root, "config", "samples", "etcd_v1alpha1_etcdcluster.yaml")
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
	took, err := env.WaitSettled(ctx, ns, cluster.Name, 3*time.Minute)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Available after %s: every member healthy, a voter, at version %s", took.Round(time.Millisecond), cluster.Spec.Version))
	for _, p := range listPods(ctx, c) {
		fmt.Printf("    pod/%s  node=%s  ip=%s  image=%s  initial-cluster-state=%s\n", p.Name, p.Spec.NodeName, p.Status.PodIP,
			p.Spec.Containers[0].Image, p.Annotations[etcdv1.AnnotationInitialState])
	}
	var svcs corev1.ServiceList
	_ = c.List(ctx, &svcs, client.InNamespace(ns))
	for _, s := range svcs.Items {
		fmt.Printf("    service/%s  clusterIP=%s  publishNotReadyAddresses=%t\n", s.Name, s.Spec.ClusterIP, s.Spec.PublishNotReadyAddresses)
	}
	var pdb policyv1.PodDisruptionBudget
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Name}, &pdb); err == nil {
		fmt.Printf("    poddisruptionbudget/%s  maxUnavailable=%s\n", pdb.Name, pdb.Spec.MaxUnavailable.String())
	}
	printConditions(ctx, c, cluster.Name)
	printEvents(ctx, c)
	if err := writeAndRead(ctx, env, cluster.Name); err != nil {
		return err
	}
	refusals(ctx, c, cluster.Name)
	return nil
}

// writeAndRead puts a key through the client Service (kube-proxy picks a member) and reads it back.
func writeAndRead(ctx context.Context, env *harness.Env, name string) error {
	svc, err := env.ServiceEndpoint(ctx, ns, name)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("etcdctl --endpoints=%s put greeting hello; get greeting (through the client Service)", svc))
	cli, err := env.EtcdClient(svc)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	put, err := cli.Put(ctx, "greeting", "hello from the etcd-operator demo")
	if err != nil {
		return fmt.Errorf("put through the client Service: %w", err)
	}
	get, err := cli.Get(ctx, "greeting")
	if err != nil {
		return fmt.Errorf("get through the client Service: %w", err)
	}
	if len(get.Kvs) != 1 {
		return fmt.Errorf("get through the client Service found %d keys, want 1", len(get.Kvs))
	}
	fmt.Printf("    put at revision %d; read back %q (mod revision %d) from member %x\n", put.Header.Revision,
		get.Kvs[0].Value, get.Kvs[0].ModRevision, get.Header.MemberId)
	return nil
}

// refusals sends bad specs and prints the API server's answers.
func refusals(ctx context.Context, c client.Client, name string) {
	step("Bad specs are refused by the API server, each with the field and the fix")
	bad := map[string]func(*etcdv1.EtcdCluster){
		"size: 0":                         func(e *etcdv1.EtcdCluster) { e.Spec.Size = 0 },
		"version: 3.4.0":                  func(e *etcdv1.EtcdCluster) { e.Spec.Version = "3.4.0" },
		"version: 3.5.21 (a downgrade)":   func(e *etcdv1.EtcdCluster) { e.Spec.Version = "3.5.21" },
		"storage.kind: Persistent":        func(e *etcdv1.EtcdCluster) { e.Spec.Storage.Kind = etcdv1.StoragePersistent },
		"etcd.heartbeatIntervalMillis: 5": func(e *etcdv1.EtcdCluster) { v := int32(5); e.Spec.Etcd.HeartbeatIntervalMillis = &v },
	}
	for _, change := range []string{"size: 0", "version: 3.4.0", "version: 3.5.21 (a downgrade)", "storage.kind: Persistent", "etcd.heartbeatIntervalMillis: 5"} {
		var e etcdv1.EtcdCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
			fmt.Println("    ", err)
			return
		}
		bad[change](&e)
		fmt.Printf("    %s\n", change)
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

func cond(ctx context.Context, c client.Client, name, t string) *metav1.Condition {
	var e etcdv1.EtcdCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
		return nil
	}
	for i := range e.Status.Conditions {
		if e.Status.Conditions[i].Type == t {
			return &e.Status.Conditions[i]
		}
	}
	return nil
}

func printConditions(ctx context.Context, c client.Client, name string) {
	for _, t := range []string{etcdv1.ConditionAvailable, etcdv1.ConditionProgressing, etcdv1.ConditionDegraded} {
		if k := cond(ctx, c, name, t); k != nil {
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

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n"
}
