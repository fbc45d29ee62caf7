package bundle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/kustomize"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

var root = filepath.Join("..", "..", "..", "..")

func generate(t *testing.T, previous string, now time.Time) *Bundle {
	t.Helper()
	rec, err := release.Load(filepath.Join(root, "config", "releases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(Options{Root: root, Record: rec, Previous: previous, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGeneratedCSV(t *testing.T) {
	b := generate(t, "", time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	csv := b.CSV
	if csv.Annotations["createdAt"] != "2030-01-02T03:04:05Z" {
		t.Errorf("createdAt = %q", csv.Annotations["createdAt"])
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil || len(examples) != 2 {
		t.Errorf("alm-examples: %v (%d)", err, len(examples))
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	if len(strategy.DeploymentSpecs) != 1 || len(strategy.ClusterPermissions) != 1 || len(strategy.Permissions) != 1 {
		t.Fatalf("install strategy: %+v", strategy)
	}
	sa := strategy.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	if strategy.ClusterPermissions[0].ServiceAccountName != sa || strategy.Permissions[0].ServiceAccountName != sa {
		t.Error("permissions are not granted to the Deployment's service account")
	}
	c := strategy.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	if c.Image != csv.Annotations["containerImage"] || c.Env[0].ValueFrom == nil {
		t.Errorf("manager image %q / WATCH_NAMESPACE %+v", c.Image, c.Env)
	}
	var images []string
	for _, ri := range csv.Spec.RelatedImages {
		images = append(images, ri.Image)
	}
	for _, v := range etcdv1.KnownVersions {
		if !slices.Contains(images, "quay.io/coreos/etcd:v"+v) {
			t.Errorf("relatedImages lacks etcd %s: %v", v, images)
		}
	}
	if len(csv.Spec.Icon) != 1 || csv.Spec.Icon[0].MediaType != "image/svg+xml" {
		t.Error("icon missing")
	}
	for _, f := range []string{"metadata/annotations.yaml", "tests/scorecard/config.yaml", csvFile, "manifests/etcdclusters.etcd.quorumkit.dev.yaml"} {
		if _, ok := b.Files[f]; !ok {
			t.Errorf("bundle lacks %s", f)
		}
	}
}

func TestCreatedAtIsStableUnlessContentChanges(t *testing.T) {
	dir := t.TempDir()
	first := generate(t, "", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := first.Files.Write(dir); err != nil {
		t.Fatal(err)
	}
	again := generate(t, dir, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	if got := again.CSV.Annotations["createdAt"]; got != "2030-01-01T00:00:00Z" {
		t.Fatalf("unchanged content got a new createdAt %s", got)
	}
	if string(again.Files[csvFile]) != string(first.Files[csvFile]) {
		t.Fatal("regenerating an unchanged bundle changed the CSV")
	}
	// Any file of the bundle changing (here a CRD, the CSV untouched) moves createdAt.
	crd := filepath.Join(dir, "manifests", "etcdclusters.etcd.quorumkit.dev.yaml")
	if err := os.WriteFile(crd, append(first.Files["manifests/etcdclusters.etcd.quorumkit.dev.yaml"], []byte("# edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := generate(t, dir, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)).CSV.Annotations["createdAt"]; got != "2031-01-01T00:00:00Z" {
		t.Fatalf("a changed CRD kept the old createdAt %s", got)
	}
	rec, _ := release.Load(filepath.Join(root, "config", "releases.yaml"))
	if err := rec.Add("9.9.9", []string{"stable"}); err != nil {
		t.Fatal(err)
	}
	changed, err := Generate(Options{Root: root, Record: rec, Previous: dir, Now: func() time.Time { return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := changed.CSV.Annotations["createdAt"]; got != "2031-01-01T00:00:00Z" {
		t.Fatalf("changed content kept the old createdAt %s", got)
	}
}

func TestClassifyRefusesWhatABundleCannotCarry(t *testing.T) {
	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	tests := []struct {
		objs []*unstructured.Unstructured
		want string
	}{
		{[]*unstructured.Unstructured{obj("v1", "ConfigMap", "x")}, "renders a ConfigMap (x), which this bundle generator does not place"},
		{nil, "renders no ClusterServiceVersion"},
		{[]*unstructured.Unstructured{obj("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "a"), obj("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "b")},
			"two ClusterServiceVersions"},
	}
	for _, tt := range tests {
		_, err := classify(tt.objs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

func TestOwnedCRDEntryRequired(t *testing.T) {
	objs, err := kustomize.Render(filepath.Join(root, "config", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := classify(objs)
	if err != nil {
		t.Fatal(err)
	}
	p.base.Spec.CustomResourceDefinitions.Owned = nil
	rec, _ := release.Load(filepath.Join(root, "config", "releases.yaml"))
	_, err = buildCSV(p, csvInputs{record: rec, version: "0.1.0", iconSVG: []byte("<svg/>")})
	if err == nil || !strings.Contains(err.Error(), "no spec.customresourcedefinitions.owned entry for etcdclusters.etcd.quorumkit.dev v1alpha1") {
		t.Fatalf("missing owned entry: %v", err)
	}
}

func TestDefaultVersionMatchesCRD(t *testing.T) {
	objs, err := kustomize.Render(filepath.Join(root, "config", "crd"))
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "versions")
	got, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "version", "default")
	if got != etcdv1.DefaultVersion || !slices.Contains(etcdv1.KnownVersions, got) {
		t.Fatalf("CRD default version %q, DefaultVersion %q, known %v", got, etcdv1.DefaultVersion, etcdv1.KnownVersions)
	}
}
