package harness

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// Healthy checks the cluster directly, not only through the operator's status, which may lag: the status
// is settled, there are exactly spec.size member Pods, all Ready, and every member answers a
// linearizable read and lists exactly spec.size voters.
func (e *Env) Healthy(ctx context.Context, ns, name string) (bool, string) {
	var c etcdv1.EtcdCluster
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		return false, err.Error()
	}
	if ok, why := Settled(&c); !ok {
		return false, why
	}
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(etcdv1.SelectorLabels(name))); err != nil {
		return false, err.Error()
	}
	if len(pods.Items) != int(c.Spec.Size) {
		return false, fmt.Sprintf("%d Pods", len(pods.Items))
	}
	for _, p := range pods.Items {
		if !podReady(&p) {
			return false, p.Name + " not Ready"
		}
	}
	eps, err := e.MemberEndpoints(ctx, ns, name)
	if err != nil {
		return false, err.Error()
	}
	for pod, ep := range eps {
		if ok, why := e.memberHealthy(ctx, ep, int(c.Spec.Size)); !ok {
			return false, pod + ": " + why
		}
	}
	return true, ""
}

func (e *Env) memberHealthy(ctx context.Context, endpoint string, size int) (bool, string) {
	cli, err := e.EtcdClient(endpoint)
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	members, err := cli.MemberList(ctx)
	if err != nil {
		return false, err.Error()
	}
	if _, err := cli.Get(ctx, "health-probe"); err != nil { // linearizable: needs a leader and a quorum
		return false, err.Error()
	}
	if len(members.Members) != size {
		return false, fmt.Sprintf("lists %d members", len(members.Members))
	}
	for _, m := range members.Members {
		if m.IsLearner {
			return false, m.Name + " is a learner"
		}
	}
	return true, ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitHealed waits for the cluster to heal after a fault was injected: first (up to 10 s) for the fault
// to show, so that a check right after the fault does not pass on stale state, then until Healthy holds.
// It returns the time from the call until healed.
func (e *Env) WaitHealed(ctx context.Context, ns, name string, timeout time.Duration) (time.Duration, error) {
	begin := time.Now()
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, _ := e.Healthy(ctx, ns, name)
		return !ok, nil
	})
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, why := e.Healthy(ctx, ns, name)
		last = why
		return ok, nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s/%s did not heal in %s: %s", ns, name, timeout, last)
	}
	return time.Since(begin), nil
}
