// Package deploy installs the operator on a cluster exactly as a user of config/ would (kustomize build
// config/default, then server-side apply), for the end-to-end suite, the benchmarks and the demo.
package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorumkit/etcd-operator/operator/internal/kustomize"
)

// Namespace and Deployment of the operator as config/default names them.
const (
	Namespace  = "etcd-operator-system"
	Deployment = "etcd-operator-controller-manager"
	Container  = "manager"
	fieldOwner = "etcd-operator-e2e"
)

// Operator renders config/default under root, lets mutate adjust each object (nil leaves them as they
// are), applies them in order and waits until the CRD is established and the Deployment is available.
func Operator(ctx context.Context, c client.Client, root string, mutate func(*unstructured.Unstructured)) error {
	objs, err := kustomize.Render(filepath.Join(root, "config", "default"))
	if err != nil {
		return err
	}
	// Namespaces and CRDs before what lives in them or uses them, as kubectl apply users order them.
	first := func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "Namespace" || u.GetKind() == "CustomResourceDefinition"
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		switch {
		case first(a) && !first(b):
			return -1
		case first(b) && !first(a):
			return 1
		}
		return 0
	})
	for _, u := range objs {
		if mutate != nil {
			mutate(u)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			if err := waitEstablished(ctx, c, u.GetName()); err != nil {
				return err
			}
		}
	}
	return WaitAvailable(ctx, c)
}

// SetEnv returns a mutate function for Operator that sets an environment variable on the manager
// container (the crash hook of the end-to-end suite).
func SetEnv(name, value string) func(*unstructured.Unstructured) {
	return onManager(func(ctr map[string]any) {
		env, _ := ctr["env"].([]any)
		kept := []any{}
		for _, e := range env {
			if m, ok := e.(map[string]any); !ok || m["name"] != name {
				kept = append(kept, e)
			}
		}
		if value != "" {
			kept = append(kept, map[string]any{"name": name, "value": value})
		}
		ctr["env"] = kept
	})
}

// AddArgs returns a mutate function for Operator that appends flags to the manager's arguments (a
// later flag wins over an earlier one).
func AddArgs(args ...string) func(*unstructured.Unstructured) {
	return onManager(func(ctr map[string]any) {
		have, _ := ctr["args"].([]any)
		for _, a := range args {
			have = append(have, a)
		}
		ctr["args"] = have
	})
}

// All chains mutate functions for Operator.
func All(fns ...func(*unstructured.Unstructured)) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		for _, f := range fns {
			f(u)
		}
	}
}

// onManager applies change to the manager container of the operator's Deployment.
func onManager(change func(ctr map[string]any)) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if u.GetKind() != "Deployment" {
			return
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for i, raw := range containers {
			if ctr, ok := raw.(map[string]any); ok && ctr["name"] == Container {
				change(ctr)
				containers[i] = ctr
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	var crd apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}

// WaitAvailable waits until the operator's Deployment has rolled out: its newest ReplicaSet's Pod is
// ready. On timeout the error quotes the Pod's state, which says why (an image missing from the local
// image table, a crash loop, ...).
func WaitAvailable(ctx context.Context, c client.Client) error {
	var d appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: Deployment}, &d); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want, nil
	})
	if err != nil {
		return fmt.Errorf("operator Deployment %s/%s not available: %w; pods: %s", Namespace, Deployment, err, podStates(ctx, c))
	}
	return nil
}

// podStates summarizes the operator's Pods for error messages.
func podStates(ctx context.Context, c client.Client) string {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(Namespace)); err != nil {
		return err.Error()
	}
	out := ""
	for _, p := range pods.Items {
		out += fmt.Sprintf("[%s %s node=%q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, cs := range p.Status.ContainerStatuses {
			switch {
			case cs.State.Waiting != nil:
				out += fmt.Sprintf(" %s waiting %s: %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case cs.State.Terminated != nil:
				out += fmt.Sprintf(" %s terminated %d %s", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
			default:
				out += fmt.Sprintf(" %s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
			}
		}
		out += "]"
	}
	if out == "" {
		return "none"
	}
	return out
}
