package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

const (
	nodeLeaseNamespace = "kube-node-lease"
	kubeletVersion     = "v1.35.4" // the control plane's version: nothing should treat the agent as skewed
)

// nodeState is one Node: its address range, its event recorder and the chaos switches tests flip.
type nodeState struct {
	name        string
	cidr        netip.Prefix
	pool        *ipPool
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	poke        chan struct{} // wakes the heartbeat loop (after StartNode or Heal)

	mu          sync.Mutex
	stopped     bool // StopNode: powered off
	partitioned bool // Partition: cut off from the network
	uid         types.UID
}

func (a *Agent) newNodeState(name string, i int) (*nodeState, error) {
	cidr := podCIDR(i)
	pool, err := newIPPool(cidr)
	if err != nil {
		return nil, err
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	return &nodeState{name: name, cidr: cidr, pool: pool, broadcaster: b,
		recorder: b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: name}),
		poke:     make(chan struct{}, 1)}, nil
}

// online reports whether the node can talk to the apiserver: neither powered off nor partitioned.
func (n *nodeState) online() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.stopped && !n.partitioned
}

func (n *nodeState) isStopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped
}

func (n *nodeState) isPartitioned() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partitioned
}

func (n *nodeState) wake() {
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

// registerNode creates the Node (or adopts one left by an earlier run), posts its status and renews its
// Lease once, so it is Ready by the time Start returns.
func (a *Agent) registerNode(ctx context.Context, n *nodeState) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			corev1.LabelHostname:   n.name,
			corev1.LabelOSStable:   "linux",
			corev1.LabelArchStable: runtime.GOARCH,
		}},
		Spec: corev1.NodeSpec{PodCIDR: n.cidr.String(), PodCIDRs: []string{n.cidr.String()}},
	}
	created, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = a.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("node agent: register node %s: %w", n.name, err)
	}
	n.uid = created.UID
	if err := a.postNodeStatus(ctx, n); err != nil {
		return err
	}
	return a.renewLease(ctx, n)
}

// nodeStatus is what the agent reports of a Node; kube-controller-manager replaces the Ready condition
// with Unknown when heartbeats stop, and the next post restores it.
func (a *Agent) nodeStatus(name string, now time.Time) corev1.NodeStatus {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg,
			LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return corev1.NodeStatus{
		Capacity:    nodeAllocatable,
		Allocatable: nodeAllocatable,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: a.opts.NodeIP.String()},
			{Type: corev1.NodeHostName, Address: name}},
		NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: runtime.GOARCH,
			KubeletVersion: kubeletVersion, ContainerRuntimeVersion: "localcluster://" + kubeletVersion},
	}
}

// postNodeStatus writes the Node's status with a merge patch: lists (conditions, addresses) are
// replaced whole, and the spec (taints that the node lifecycle controller manages) is untouched.
func (a *Agent) postNodeStatus(ctx context.Context, n *nodeState) error {
	body, err := json.Marshal(map[string]any{"status": a.nodeStatus(n.name, time.Now())})
	if err != nil {
		return err
	}
	if _, err := a.client.CoreV1().Nodes().Patch(ctx, n.name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("node agent: post status of node %s: %w", n.name, err)
	}
	return nil
}

// renewLease creates or renews the Node's Lease, owned by the Node so it goes away with it.
func (a *Agent) renewLease(ctx context.Context, n *nodeState) error {
	leases := a.client.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	duration := int32(4 * a.opts.Timing.LeaseRenewInterval / time.Second)
	lease, err := leases.Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: nodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: n.uid}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.name), LeaseDurationSeconds: ptr.To(max(duration, 1)),
				RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else if err == nil {
		lease.Spec.RenewTime = &now
		lease.Spec.HolderIdentity = ptr.To(n.name)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("node agent: renew lease of node %s: %w", n.name, err)
	}
	return nil
}

// heartbeatLoop renews the Lease every interval and re-posts the status when the Ready condition is not
// ours (after kube-controller-manager marked the Node Unknown) or has grown old. It skips both while
// the node is stopped or partitioned, which is what turns the Node NotReady.
func (a *Agent) heartbeatLoop(n *nodeState) {
	tick := time.NewTicker(a.opts.Timing.LeaseRenewInterval)
	defer tick.Stop()
	lastStatus := time.Now()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-tick.C:
		case <-n.poke:
		}
		if !n.online() {
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, a.opts.Timing.LeaseRenewInterval)
		if err := a.renewLease(ctx, n); err != nil {
			a.logf("%v", err)
		}
		if time.Since(lastStatus) >= a.opts.Timing.NodeStatusInterval || !a.nodeReadyPosted(ctx, n) {
			if err := a.postNodeStatus(ctx, n); err != nil {
				a.logf("%v", err)
			} else {
				lastStatus = time.Now()
			}
		}
		cancel()
	}
}

// nodeReadyPosted reports whether the Node's Ready condition is still the True this agent posted.
func (a *Agent) nodeReadyPosted(ctx context.Context, n *nodeState) bool {
	node, err := a.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue && c.Reason == "KubeletReady"
		}
	}
	return false
}
