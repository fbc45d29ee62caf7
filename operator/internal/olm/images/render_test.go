package images

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/action"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// TestRenderBundleImageFromRegistry renders the pushed bundle image with operator-registry's own
// renderer, as `opm render <bundle image>` does when a catalog is assembled, reading the image through
// the go-containerregistry adapter.
func TestRenderBundleImageFromRegistry(t *testing.T) {
	img, err := BuildBundleImage(fixtureBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	ref := startRegistry(t) + "/quorumkit/etcd-operator-bundle:v0.0.1"
	if err := Push(img, ref); err != nil {
		t.Fatal(err)
	}
	cfg, err := action.Render{Refs: []string{ref}, Registry: NewRegistry(), AllowedRefMask: action.RefBundleImage}.Run(context.Background())
	if err != nil {
		t.Fatalf("render %s: %v", ref, err)
	}
	if len(cfg.Bundles) != 1 {
		t.Fatalf("rendered %d bundles, want 1", len(cfg.Bundles))
	}
	b := cfg.Bundles[0]
	if b.Package != fixturePackage || b.Name != fixtureCSV || b.Image != ref {
		t.Errorf("bundle package %q name %q image %q; want %q %q %q", b.Package, b.Name, b.Image, fixturePackage, fixtureCSV, ref)
	}
	counts := map[string]int{}
	for _, p := range b.Properties {
		counts[p.Type]++
		if p.Type == property.TypePackage {
			var pkg property.Package
			if err := json.Unmarshal(p.Value, &pkg); err != nil || pkg.PackageName != fixturePackage || pkg.Version != "0.0.1" {
				t.Errorf("olm.package property %s (%v)", p.Value, err)
			}
		}
	}
	// One olm.bundle.object per manifest: the CSV and the CRD.
	if counts[property.TypeBundleObject] != 2 || counts[property.TypePackage] != 1 || counts[property.TypeGVK] != 1 {
		t.Errorf("property counts %v, want 2 olm.bundle.object, 1 olm.package, 1 olm.gvk", counts)
	}
}

// TestRenderCatalogImageFromRegistry renders the pushed catalog image as catalogd and `opm render`
// read it: through the configs label, to the same declarative config as the catalog directory.
func TestRenderCatalogImageFromRegistry(t *testing.T) {
	dir, img := fixtureCatalogImage(t)
	ref := startRegistry(t) + "/quorumkit/etcd-operator-catalog:v0.0.1"
	if err := Push(img, ref); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := action.Render{Refs: []string{ref}, Registry: NewRegistry(), AllowedRefMask: action.RefDCImage}.Run(ctx)
	if err != nil {
		t.Fatalf("render %s: %v", ref, err)
	}
	want, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("catalog rendered from the image differs from %s:\n got %s\nwant %s", dir, gotJSON, wantJSON)
	}
	if len(got.Packages) != 1 || len(got.Bundles) != 1 || got.Bundles[0].Image != fixtureImage {
		t.Errorf("rendered %d packages, %d bundles", len(got.Packages), len(got.Bundles))
	}
}
