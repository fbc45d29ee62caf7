package images

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/action"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/client"
	"github.com/operator-framework/operator-registry/pkg/lib/bundle"
)

// TestRealBundleAndCatalog builds the committed bundle/ and catalog/ into images and checks them as
// the fixture tests do: the Dockerfiles match, the bundle image renders to the bundle, and the catalog
// image's own cache serves that bundle at the head of each of its channels.
//
// Enabled once bundle/ and catalog/ are generated.
func TestRealBundleAndCatalog(t *testing.T) {
	root := repoRoot(t)
	bundleDir, catalogDir := filepath.Join(root, "bundle"), filepath.Join(root, "catalog")
	for _, dir := range []string{bundleDir, catalogDir} {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s is missing (%v): run make bundle catalog", dir, err)
		}
	}
	if err := CheckDockerfiles(root); err != nil {
		t.Errorf("Dockerfiles against the repository:\n%v", err)
	}
	annotations, err := ReadAnnotations(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := BuildBundleImage(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	ref := startRegistry(t) + "/quorumkit/etcd-operator-bundle:real"
	pushAndPull(t, img, ref)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rendered, err := action.Render{Refs: []string{ref}, Registry: NewRegistry(), AllowedRefMask: action.RefBundleImage}.Run(ctx)
	if err != nil || len(rendered.Bundles) != 1 {
		t.Fatalf("render the real bundle image: %v", err)
	}
	csv, pkgName := rendered.Bundles[0].Name, annotations[bundle.PackageLabel]
	if rendered.Bundles[0].Package != pkgName {
		t.Errorf("rendered package %q, annotations say %q", rendered.Bundles[0].Package, pkgName)
	}

	catalogImg, err := BuildCatalogImage(catalogDir, opmBinary(t), probeBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	pushAndPull(t, catalogImg, startRegistry(t)+"/quorumkit/etcd-operator-catalog:real")
	extracted := t.TempDir()
	if err := Extract(catalogImg, extracted, false); err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(filepath.Join(extracted, "tmp", "cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.CheckIntegrity(ctx, os.DirFS(filepath.Join(extracted, "configs"))); err != nil {
		t.Fatalf("the real catalog image's cache fails its integrity check: %v", err)
	}
	if err := c.Load(ctx); err != nil {
		t.Fatal(err)
	}
	cl := serveInProcess(t, c)
	// The committed bundle is the newest release, so it heads every channel it names, and the default
	// channel is the one it names.
	for _, channel := range strings.Split(annotations[bundle.ChannelsLabel], ",") {
		t.Run("channel "+channel, func(t *testing.T) {
			pkg, err := cl.GetPackage(ctx, pkgName)
			if err != nil {
				t.Fatal(err)
			}
			if pkg.GetDefaultChannelName() != annotations[bundle.ChannelDefaultLabel] {
				t.Errorf("catalog default channel %q, bundle annotations %q", pkg.GetDefaultChannelName(), annotations[bundle.ChannelDefaultLabel])
			}
			b, err := cl.GetBundle(ctx, pkgName, channel, csv)
			if err != nil {
				t.Fatalf("GetBundle %s/%s/%s: %v", pkgName, channel, csv, err)
			}
			for _, ch := range pkg.GetChannels() {
				if ch.GetName() == channel && ch.GetCsvName() != csv {
					t.Errorf("channel %s head %q, the committed bundle is %q", channel, ch.GetCsvName(), csv)
				}
			}
			if b.GetCsvJson() == "" || len(b.GetObject()) == 0 {
				t.Errorf("bundle %s has no CSV JSON or objects: OLM v0 would not show it", csv)
			}
		})
	}
}

// serveInProcess serves c over gRPC on a loopback port, as opm serve does, and returns a client.
func serveInProcess(t *testing.T, c cache.Cache) *client.Client {
	t.Helper()
	addr := startCatalogServer(t, c)
	cl, err := client.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
