package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/operatorhub"
)

func TestOperatorHubTree(t *testing.T) {
	root := repoCopy(t)
	if err := runRelease([]string{"-root", root, "-version", "0.2.0"}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := runOperatorHub([]string{"-root", root, "-out", out}); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(out, "operators", "etcd-operator")
	for _, f := range []string{"ci.yaml", "catalog-templates/basic.yaml", "0.1.0/metadata/annotations.yaml",
		"0.2.0/manifests/etcd-operator.v0.2.0.clusterserviceversion.yaml", "0.1.0/manifests/etcdclusters.etcd.quorumkit.dev.customresourcedefinition.yaml"} {
		if _, err := os.Stat(filepath.Join(pkg, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if ci := read(t, filepath.Join(pkg, "ci.yaml")); !strings.Contains(ci, "enabled: true") || !strings.Contains(ci, "olm.template.basic") {
		t.Errorf("ci.yaml does not enable file-based catalogs:\n%s", ci)
	}

	broken := []struct {
		name   string
		mutate func(pkg string) error
		want   string
	}{
		{"folder not the CSV version", func(pkg string) error { return os.Rename(filepath.Join(pkg, "0.2.0"), filepath.Join(pkg, "0.2.1")) },
			"folder 0.2.1 holds CSV version 0.2.0"},
		{"replaces missing", func(pkg string) error { return os.RemoveAll(filepath.Join(pkg, "0.1.0")) },
			"replaces etcd-operator.v0.1.0, which is not in the submission"},
		{"package mismatch", func(pkg string) error {
			p := filepath.Join(pkg, "0.2.0", "metadata", "annotations.yaml")
			return os.WriteFile(p, []byte(strings.ReplaceAll(read(t, p), "package.v1: etcd-operator", "package.v1: etcd")), 0o644)
		}, `annotations name package "etcd" but the folder is "etcd-operator"`},
		{"network policy", func(pkg string) error {
			return os.WriteFile(filepath.Join(pkg, "0.2.0", "manifests", "np.yaml"),
				[]byte("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: x\nspec:\n  podSelector: {}\n"), 0o644)
		}, "ships a NetworkPolicy"},
	}
	for _, tt := range broken {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := runOperatorHub([]string{"-root", root, "-out", dir}); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "operators", "etcd-operator")
			if err := tt.mutate(p); err != nil {
				t.Fatal(err)
			}
			err := operatorhub.Check(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
