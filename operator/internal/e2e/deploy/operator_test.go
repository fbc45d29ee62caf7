package deploy_test

import (
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
	"github.com/quorumkit/etcd-operator/operator/internal/kustomize"
	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// The mutations the suite uses change the manager container of the Deployment config/default renders,
// and nothing else.
func TestMutationsChangeTheManagerOnly(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Render(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	mutate := deploy.All(
		deploy.SetEnv("ETCD_OPERATOR_CRASH_AFTER", "any"),
		deploy.SetEnv("ETCD_OPERATOR_CRASH_AFTER", "Upgrade"), // the later value replaces the earlier
		deploy.AddArgs("--leader-elect-lease-duration=2s"),
	)
	var manager map[string]any
	for _, u := range objs {
		before := u.DeepCopy()
		mutate(u)
		if u.GetKind() != "Deployment" {
			if !equal(before, u) {
				t.Errorf("%s %s changed", u.GetKind(), u.GetName())
			}
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m := c.(map[string]any); m["name"] == deploy.Container {
				manager = m
			}
		}
	}
	if manager == nil {
		t.Fatalf("config/default renders no Deployment with a %q container", deploy.Container)
	}
	var crash []string
	for _, e := range manager["env"].([]any) {
		if m := e.(map[string]any); m["name"] == "ETCD_OPERATOR_CRASH_AFTER" {
			crash = append(crash, m["value"].(string))
		}
	}
	if !slices.Equal(crash, []string{"Upgrade"}) {
		t.Errorf("ETCD_OPERATOR_CRASH_AFTER values = %q, want exactly [Upgrade]", crash)
	}
	args := manager["args"].([]any)
	if args[len(args)-1] != "--leader-elect-lease-duration=2s" || !slices.Contains(args, any("--leader-elect")) {
		t.Errorf("args = %v, want config's flags followed by the added one", args)
	}
}

func equal(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}
