package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/catalog"
)

// repoCopy copies config/, bundle/ and catalog/ into a temporary repository root.
func repoCopy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"config", "bundle", "catalog"} {
		if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "..", dir), root).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", dir, err, out)
		}
	}
	return root
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func channel(t *testing.T, cfg *declcfg.DeclarativeConfig, name string) declcfg.Channel {
	t.Helper()
	for _, c := range cfg.Channels {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no channel %s", name)
	return declcfg.Channel{}
}

func TestReleasesAccumulateIntoOneUpgradeChain(t *testing.T) {
	root := repoCopy(t)
	first := read(t, filepath.Join(root, "catalog", "etcd-operator", "bundles", "v0.1.0.yaml"))
	if err := runRelease([]string{"-root", root, "-version", "0.2.0"}); err != nil {
		t.Fatal(err)
	}
	if err := runRelease([]string{"-root", root, "-version", "0.3.0", "-channels", "candidate"}); err != nil {
		t.Fatal(err)
	}

	var csv struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Replaces string `json:"replaces"`
			Version  string `json:"version"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(read(t, filepath.Join(root, "bundle", "manifests", "etcd-operator.clusterserviceversion.yaml"))), &csv); err != nil {
		t.Fatal(err)
	}
	if csv.Metadata.Name != "etcd-operator.v0.3.0" || csv.Spec.Replaces != "etcd-operator.v0.2.0" || csv.Spec.Version != "0.3.0" ||
		csv.Metadata.Annotations["olm.skipRange"] != ">=0.1.0 <0.3.0" || csv.Metadata.Annotations["containerImage"] != "quay.io/quorumkit/etcd-operator:v0.3.0" {
		t.Fatalf("CSV after two releases: %+v", csv)
	}
	if got := read(t, filepath.Join(root, "catalog", "etcd-operator", "bundles", "v0.1.0.yaml")); got != first {
		t.Fatal("the released v0.1.0 bundle changed in the catalog")
	}
	if !strings.Contains(read(t, filepath.Join(root, "config", "manager", "kustomization.yaml")), "newTag: v0.3.0") {
		t.Error("config/manager image tag not moved to the release")
	}

	cfg, err := catalog.ValidateDir(context.Background(), filepath.Join(root, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	stable, candidate := channel(t, cfg, "stable"), channel(t, cfg, "candidate")
	if len(stable.Entries) != 2 || stable.Entries[1].Name != "etcd-operator.v0.2.0" || stable.Entries[1].Replaces != "etcd-operator.v0.1.0" {
		t.Errorf("stable = %+v", stable.Entries)
	}
	if len(candidate.Entries) != 3 || candidate.Entries[2].Replaces != "etcd-operator.v0.2.0" || candidate.Entries[2].SkipRange != ">=0.1.0 <0.3.0" {
		t.Errorf("candidate = %+v", candidate.Entries)
	}
	if len(cfg.Bundles) != 3 {
		t.Errorf("%d bundles in the catalog, want 3", len(cfg.Bundles))
	}
	if err := runVerify([]string{"-root", root}); err != nil {
		t.Fatalf("verify after release: %v", err)
	}
	if err := runRelease([]string{"-root", root, "-version", "0.2.5"}); err == nil || !strings.Contains(err.Error(), "versions must increase") {
		t.Fatalf("releasing an older version: %v", err)
	}
}

func TestCatalogRefusesMissingOrStrayReleasedBundles(t *testing.T) {
	root := repoCopy(t)
	if err := runRelease([]string{"-root", root, "-version", "0.2.0"}); err != nil {
		t.Fatal(err)
	}
	bundles := filepath.Join(root, "catalog", "etcd-operator", "bundles")
	stray := filepath.Join(bundles, "v9.9.9.yaml")
	if err := os.WriteFile(stray, []byte(read(t, filepath.Join(bundles, "v0.1.0.yaml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runCatalog([]string{"-root", root})
	if err == nil || !strings.Contains(err.Error(), "v9.9.9.yaml is not a release in config/releases.yaml") {
		t.Fatalf("stray bundle file: %v", err)
	}
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bundles, "v0.1.0.yaml")); err != nil {
		t.Fatal(err)
	}
	err = runCatalog([]string{"-root", root})
	if err == nil || !strings.Contains(err.Error(), "release 0.1.0 has no bundle in the catalog") || !strings.Contains(err.Error(), "restore the file from git history") {
		t.Fatalf("missing released bundle: %v", err)
	}
}

func TestVerifyCatchesDrift(t *testing.T) {
	root := repoCopy(t)
	if err := runVerify([]string{"-root", root}); err != nil {
		t.Fatalf("fresh copy: %v", err)
	}
	csv := filepath.Join(root, "config", "manifests", "bases", "etcd-operator.clusterserviceversion.yaml")
	if err := os.WriteFile(csv, []byte(strings.Replace(read(t, csv), "maturity: alpha", "maturity: beta", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runVerify([]string{"-root", root}); err == nil || !strings.Contains(err.Error(), "run make bundle") {
		t.Fatalf("drift not caught: %v", err)
	}
}
