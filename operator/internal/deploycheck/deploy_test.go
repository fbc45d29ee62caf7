package deploycheck

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/quorumkit/etcd-operator/operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// documents splits a multi-document YAML file.
func documents(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, &u)
		}
	}
}

func restrictedNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "psa-",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestManagerDeploymentPassesRestrictedPodSecurity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := restrictedNamespace(t, ctx)

	var dep *appsv1.Deployment
	for _, u := range documents(t, repoFile(t, "config/manager/manager.yaml")) {
		if u.GetKind() == "Deployment" {
			b, _ := yaml.Marshal(u.Object)
			dep = &appsv1.Deployment{}
			if err := yaml.Unmarshal(b, dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep == nil {
		t.Fatal("no Deployment in config/manager/manager.yaml")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("the manager needs CPU and memory requests")
	}
	if !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
		t.Error("the manager needs a read-only root filesystem")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "manager", Namespace: ns}, Spec: dep.Spec.Template.Spec}
	pod.Spec.ServiceAccountName = ""
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("the manager Pod is refused in a restricted namespace: %v", err)
	}

	// The check above can fail: a Pod allowing privilege escalation is refused in the same namespace.
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Spec: *dep.Spec.Template.Spec.DeepCopy()}
	bad.Spec.ServiceAccountName = ""
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	if err := env.Client.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "allowPrivilegeEscalation") {
		t.Fatalf("a privilege-escalating Pod was not refused (is PodSecurity admission on?): %v", err)
	}
}

func TestSamplesAreValid(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := restrictedNamespace(t, ctx)
	matches, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "samples", "etcd_*.yaml"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, path := range matches {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range documents(t, data) {
			u.SetNamespace(ns)
			if err := env.Client.Create(ctx, u); err != nil {
				t.Errorf("%s: %v", filepath.Base(path), err)
			}
		}
	}
}
