package harness

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

// NewCluster is an EtcdCluster of size members at version, with mutate applied (nil: none).
func NewCluster(ns, name string, size int32, version string, mutate func(*etcdv1.EtcdCluster)) *etcdv1.EtcdCluster {
	c := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       etcdv1.EtcdClusterSpec{Size: size, Version: version},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// Create creates the cluster's namespace if needed and the cluster.
func (e *Env) Create(ctx context.Context, c *etcdv1.EtcdCluster) error {
	if err := e.EnsureNamespace(ctx, c.Namespace); err != nil {
		return err
	}
	if err := e.Client.Create(ctx, c); err != nil {
		return fmt.Errorf("create EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// Update re-reads the cluster, applies change and writes it back, retrying on conflicts.
func (e *Env) Update(ctx context.Context, ns, name string, change func(*etcdv1.EtcdCluster)) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var c etcdv1.EtcdCluster
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return false, err
		}
		change(&c)
		err := e.Client.Update(ctx, &c)
		if err != nil && isConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// Settled reports whether the cluster has reached its spec: the operator saw the latest generation, the
// cluster is Available, not Progressing, not Degraded, and every member is a healthy voter at the spec's
// version.
func Settled(c *etcdv1.EtcdCluster) (bool, string) {
	s := c.Status
	switch {
	case s.ObservedGeneration < c.Generation:
		return false, fmt.Sprintf("observed generation %d < %d", s.ObservedGeneration, c.Generation)
	case !apimeta.IsStatusConditionTrue(s.Conditions, etcdv1.ConditionAvailable):
		return false, "not Available: " + conditionText(s.Conditions, etcdv1.ConditionAvailable)
	case apimeta.IsStatusConditionTrue(s.Conditions, etcdv1.ConditionProgressing):
		return false, "Progressing: " + conditionText(s.Conditions, etcdv1.ConditionProgressing)
	case apimeta.IsStatusConditionTrue(s.Conditions, etcdv1.ConditionDegraded):
		return false, "Degraded: " + conditionText(s.Conditions, etcdv1.ConditionDegraded)
	case int32(len(s.Members)) != c.Spec.Size || s.ReadyMembers != c.Spec.Size:
		return false, fmt.Sprintf("%d members, %d ready, want %d", len(s.Members), s.ReadyMembers, c.Spec.Size)
	}
	for _, m := range s.Members {
		if !m.Healthy || m.Role == etcdv1.RoleLearner || m.Version != c.Spec.Version {
			return false, fmt.Sprintf("member %s healthy=%v role=%s version=%s", m.Name, m.Healthy, m.Role, m.Version)
		}
	}
	return true, ""
}

func conditionText(conds []metav1.Condition, t string) string {
	if c := apimeta.FindStatusCondition(conds, t); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "no condition yet"
}

// WaitSettled waits until Settled holds and returns how long it took. On timeout the error says what was
// still missing.
func (e *Env) WaitSettled(ctx context.Context, ns, name string, timeout time.Duration) (time.Duration, error) {
	begin := time.Now()
	last := "not found"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var c etcdv1.EtcdCluster
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			if ctx.Err() == nil { // the Get cut short by the deadline would hide the last real reason
				last = err.Error()
			}
			return false, nil
		}
		ok, why := Settled(&c)
		last = why
		return ok, nil
	})
	if err != nil {
		return 0, fmt.Errorf("EtcdCluster %s/%s did not settle in %s: %s", ns, name, timeout, last)
	}
	return time.Since(begin), nil
}

// ServiceEndpoint is the cluster's client Service address (ClusterIP:2379), served by kube-proxy.
func (e *Env) ServiceEndpoint(ctx context.Context, ns, name string) (string, error) {
	var svc corev1.Service
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: etcdv1.ClientServiceName(name)}, &svc); err != nil {
		return "", fmt.Errorf("client Service of %s/%s: %w", ns, name, err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(etcdv1.ClientPort)), nil
}

// MemberEndpoints are the members' client addresses (podIP:2379), by Pod name.
func (e *Env) MemberEndpoints(ctx context.Context, ns, name string) (map[string]string, error) {
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(etcdv1.SelectorLabels(name))); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out[p.Name] = net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdv1.ClientPort))
		}
	}
	return out, nil
}

// EtcdClient opens a client to endpoints (host:port) whose connections are made inside the cluster.
func (e *Env) EtcdClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return e.DialContext(ctx, "tcp", addr)
		})},
	})
}

// Leader returns the Pod name of the member that is leader, asking each member.
func (e *Env) Leader(ctx context.Context, ns, name string) (string, error) {
	eps, err := e.MemberEndpoints(ctx, ns, name)
	if err != nil {
		return "", err
	}
	for pod, ep := range eps {
		cli, err := e.EtcdClient(ep)
		if err != nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		_ = cli.Close()
		if err == nil && st.Header.MemberId == st.Leader {
			return pod, nil
		}
	}
	return "", fmt.Errorf("no member of %s/%s says it is the leader", ns, name)
}

// NodeOf returns the Node a Pod runs on.
func (e *Env) NodeOf(ctx context.Context, ns, pod string) (string, error) {
	var p corev1.Pod
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &p); err != nil {
		return "", err
	}
	return p.Spec.NodeName, nil
}

func isConflict(err error) bool { return apierrors.IsConflict(err) }
