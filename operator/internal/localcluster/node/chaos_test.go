package node_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/node"
)

// testPVC runs etcd on a claim of the default class: the scheduler picks a node, the agent provisions a
// local volume there, kube-controller-manager binds it, and deleting the claim deletes volume and
// directory.
func testPVC(t *testing.T, e *env) {
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-etcd-p", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := etcdPod("etcd-p", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}})
	// An init container runs to completion first (etcd --version is all the image can do).
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: etcdImage,
		Command: []string{"/usr/local/bin/etcd", "--version"}, VolumeMounts: pod.Spec.Containers[0].VolumeMounts}}
	pod.Spec.Containers[0].LivenessProbe.GRPC = nil // a TCP liveness probe here, for coverage
	pod.Spec.Containers[0].LivenessProbe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromString("client")}
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitReady(t, e, "etcd-p", 90*time.Second)
	t.Logf("etcd pod on a provisioned volume: creation to Ready %v", took.Round(time.Millisecond))
	got, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim: %+v %v", got.Status, err)
	}
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := getPod(e, "etcd-p")
	if ics := p.Status.InitContainerStatuses; len(ics) != 1 || ics[0].State.Terminated == nil ||
		ics[0].State.Terminated.Reason != "Completed" || podCondition(p, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("init container: %+v", ics)
	}
	wantDir := filepath.Join(e.dir, p.Spec.NodeName, "pv", pv.Name)
	if pv.Spec.Local == nil || pv.Spec.Local.Path != wantDir || pv.Spec.StorageClassName != node.StorageClassName ||
		pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != p.Spec.NodeName {
		t.Errorf("volume: %+v", pv.Spec)
	}
	if _, err := os.Stat(filepath.Join(wantDir, "data", "member")); err != nil {
		t.Errorf("etcd's data is not in the provisioned directory: %v", err)
	}
	deletePod(t, e, "etcd-p")
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "released volume deleted", func() (bool, string) {
		_, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		_, statErr := os.Stat(wantDir)
		return apierrors.IsNotFound(err) && os.IsNotExist(statErr), fmt.Sprintf("pv: %v, dir: %v", err, statErr)
	})
}

// onNode pins a Pod to a node through the scheduler (as a nodeSelector would).
func onNode(p *corev1.Pod, name string) *corev1.Pod {
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": name}
	return p
}

func dialPod(e *env, ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := e.cluster.RESTConfig().Dial(ctx, "tcp", net.JoinHostPort(ip, "2379"))
	if err == nil {
		_ = c.Close()
	}
	return err
}

// testPartition cuts node-b's pods off: they keep running but are unreachable; Heal restores them.
// A SIGKILLed container then restarts (KillContainer).
func testPartition(t *testing.T, e *env) {
	ctx := context.Background()
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, onNode(etcdPod("etcd-b", emptyDir()), "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, "etcd-b", 60*time.Second)
	p, _ := getPod(e, "etcd-b")
	pid, err := e.agent.ContainerPID("default", "etcd-b", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.agent.Partition("node-b"); err != nil {
		t.Fatal(err)
	}
	if err := dialPod(e, p.Status.PodIP); err == nil {
		t.Error("a partitioned pod is reachable")
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("partition stopped the process: %v", err)
	}
	if err := e.agent.Heal("node-b"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "healed pod reachable", func() (bool, string) {
		err := dialPod(e, p.Status.PodIP)
		return err == nil, fmt.Sprint(err)
	})

	if err := e.agent.KillContainer("default", "etcd-b", "etcd", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "killed container restarted and Ready", func() (bool, string) {
		p, err := getPod(e, "etcd-b")
		if err != nil {
			return false, err.Error()
		}
		cs := p.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		return cs.RestartCount == 1 && cs.Ready && last != nil && last.ExitCode == 137, fmt.Sprintf("%+v", cs)
	})
	deletePod(t, e, "etcd-b")
}

// testStopStartNode powers node-a off: the control plane marks it NotReady (and its Pod not ready);
// powering it on brings the Node and the Pod back, with the emptyDir contents kept.
func testStopStartNode(t *testing.T, e *env) {
	ctx := context.Background()
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, onNode(etcdPod("etcd-s", emptyDir()), "node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, "etcd-s", 60*time.Second)
	pid, err := e.agent.ContainerPID("default", "etcd-s", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("/proc/%d/root/var/lib/etcd/marker", pid)
	if err := os.WriteFile(marker, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.agent.StopNode("node-a"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Error("etcd survived StopNode")
	}
	notReady := waitFor(t, 120*time.Second, "node-a NotReady", func() (bool, string) {
		n, err := e.client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && !nodeReady(n), fmt.Sprint(err)
	})
	t.Logf("StopNode to Node NotReady: %v", notReady.Round(time.Millisecond))
	waitFor(t, 30*time.Second, "etcd-s marked not ready by the control plane", func() (bool, string) {
		p, err := getPod(e, "etcd-s")
		return err == nil && podCondition(p, corev1.PodReady) != corev1.ConditionTrue, fmt.Sprint(err)
	})
	if n, _ := e.client.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{}); !nodeReady(n) {
		t.Error("node-b went NotReady too")
	}

	begin := time.Now()
	if err := e.agent.StartNode("node-a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "node-a Ready again", func() (bool, string) {
		n, err := e.client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && nodeReady(n), fmt.Sprint(err)
	})
	back := waitReady(t, e, "etcd-s", 60*time.Second)
	t.Logf("StartNode to pod Ready again: %v (since start %v)", back.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	p, _ := getPod(e, "etcd-s")
	if cs := p.Status.ContainerStatuses[0]; cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil {
		t.Errorf("after StartNode: %+v", cs)
	}
	newPID, err := e.agent.ContainerPID("default", "etcd-s", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/var/lib/etcd/marker", newPID)); err != nil || string(data) != "kept" {
		t.Errorf("emptyDir contents lost across StopNode/StartNode: %q %v", data, err)
	}
	deletePod(t, e, "etcd-s")
}
