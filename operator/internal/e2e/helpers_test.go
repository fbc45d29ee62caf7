package e2e_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
)

func mustLeader(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	var leader string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := env.Leader(ctx, ns, name)
		leader = l
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no leader in %s/%s: %v", ns, name, err)
	}
	return leader
}

// otherMember returns a member Pod that is not pod.
func otherMember(t *testing.T, ctx context.Context, ns, name, pod string) string {
	t.Helper()
	eps, err := env.MemberEndpoints(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for p := range eps {
		if p != pod {
			return p
		}
	}
	t.Fatalf("%s/%s has no member besides %s", ns, name, pod)
	return ""
}

// followerAwayFromOperator returns a member that does not lead and runs on a node the operator's Pod
// does not run on, and that node. With three members on three nodes there always is one.
func followerAwayFromOperator(t *testing.T, ctx context.Context, ns, name string) (pod, node string) {
	t.Helper()
	var ops corev1.PodList
	if err := env.Client.List(ctx, &ops, client.InNamespace(deploy.Namespace)); err != nil {
		t.Fatal(err)
	}
	avoid := map[string]bool{}
	for _, p := range ops.Items {
		avoid[p.Spec.NodeName] = true
	}
	leader := mustLeader(t, ctx, ns, name)
	for _, p := range memberPods(t, ctx, ns, name) {
		if p.Name != leader && !avoid[p.Spec.NodeName] {
			return p.Name, p.Spec.NodeName
		}
	}
	t.Fatalf("%s/%s has no follower away from the operator's nodes %v", ns, name, avoid)
	return "", ""
}

func nodeOf(t *testing.T, ctx context.Context, ns, pod string) string {
	t.Helper()
	node, err := env.NodeOf(ctx, ns, pod)
	if err != nil || node == "" {
		t.Fatalf("node of %s/%s: %q %v", ns, pod, node, err)
	}
	return node
}

func memberPods(t *testing.T, ctx context.Context, ns, name string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(etcdv1.SelectorLabels(name))); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

func assertPods(t *testing.T, ctx context.Context, ns, name string, want int) {
	t.Helper()
	if got := memberPods(t, ctx, ns, name); len(got) != want {
		t.Fatalf("%s/%s has %d member Pods, want %d", ns, name, len(got), want)
	}
}

// waitReplaced waits for the cluster to heal after a fault (see harness.Env.WaitHealed).
func waitReplaced(t *testing.T, ctx context.Context, ns, name string) time.Duration {
	t.Helper()
	took, err := env.WaitHealed(ctx, ns, name, settle)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// waitUnhealthy waits until the operator reports fewer ready members than the spec.
func waitUnhealthy(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var c etcdv1.EtcdCluster
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return false, nil
		}
		return c.Status.ReadyMembers < c.Spec.Size, nil
	})
	if err != nil {
		t.Fatalf("the operator never reported the lost member of %s/%s: %v", ns, name, err)
	}
}

func findCondition(c *etcdv1.EtcdCluster, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(c.Status.Conditions, t)
}

// operatorRestarts sums the restarts of the operator's containers.
func operatorRestarts(t *testing.T, ctx context.Context) int {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(deploy.Namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += int(cs.RestartCount)
		}
	}
	return n
}
