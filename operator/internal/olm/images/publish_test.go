package images

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestWriteLayout writes two images into one OCI layout, rewrites one under the same ref, and reads
// them back by their ref annotations, as skopeo copy oci:<dir>:<ref> would.
func TestWriteLayout(t *testing.T) {
	op, err := BuildOperatorImage(helloBinary(t), OperatorImageOptions{Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := BuildBundleImage(fixtureBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	refs := map[string]v1.Image{
		"quay.io/quorumkit/etcd-operator:v0.0.1":        op,
		"quay.io/quorumkit/etcd-operator-bundle:v0.0.1": bundle,
	}
	for ref, img := range refs {
		if err := WriteLayout(dir, img, ref); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteLayout(dir, bundle, "quay.io/quorumkit/etcd-operator-bundle:v0.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		t.Errorf("no oci-layout file: %v", err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("layout has %d manifests, want 2 (a rewrite under the same ref replaces)", len(m.Manifests))
	}
	for _, desc := range m.Manifests {
		ref := desc.Annotations[RefNameAnnotation]
		want, ok := refs[ref]
		if !ok {
			t.Errorf("layout has an image named %q", ref)
			continue
		}
		img, err := p.Image(desc.Digest)
		if err != nil {
			t.Fatalf("read %s from the layout: %v", ref, err)
		}
		got, _ := img.Digest()
		wantDigest, _ := want.Digest()
		if got != wantDigest {
			t.Errorf("%s: layout digest %s, built %s", ref, got, wantDigest)
		}
		if _, err := img.Layers(); err != nil {
			t.Errorf("%s: layers: %v", ref, err)
		}
	}
	if err := WriteLayout(dir, bundle, ""); err == nil {
		t.Error("WriteLayout accepted an empty ref")
	}
}

// TestImagesAreReproducible builds each image twice: the digests must match, and must change when
// content changes. The catalog's cache layer is the documented exception (pogreb's random hash seed).
func TestImagesAreReproducible(t *testing.T) {
	digest := func(img v1.Image, err error) v1.Hash {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	opts := OperatorImageOptions{Version: "0.0.1"}
	if a, b := digest(BuildOperatorImage(helloBinary(t), opts)), digest(BuildOperatorImage(helloBinary(t), opts)); a != b {
		t.Errorf("operator image digests %s and %s from the same input", a, b)
	}
	opts.Version = "0.0.2"
	if a, b := digest(BuildOperatorImage(helloBinary(t), OperatorImageOptions{Version: "0.0.1"})), digest(BuildOperatorImage(helloBinary(t), opts)); a == b {
		t.Error("operator image digest unchanged by a new version label")
	}

	dir := copyDir(t, fixtureBundle(t))
	first := digest(BuildBundleImage(dir))
	if again := digest(BuildBundleImage(fixtureBundle(t))); again != first {
		t.Errorf("bundle image digests %s and %s from the same files in two directories", first, again)
	}
	// Modes and times of the files on disk must not matter either.
	csv := filepath.Join(dir, "manifests", "etcd-operator.clusterserviceversion.yaml")
	if err := os.Chmod(csv, 0o600); err != nil {
		t.Fatal(err)
	}
	if again := digest(BuildBundleImage(dir)); again != first {
		t.Errorf("bundle image digest changed with a file mode on disk: %s -> %s", first, again)
	}
	f, err := os.OpenFile(csv, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("# changed\n")
	_ = f.Close()
	if again := digest(BuildBundleImage(dir)); again == first {
		t.Error("bundle image digest unchanged by a changed manifest")
	}

	catalogDir, img := fixtureCatalogImage(t)
	again, err := BuildCatalogImage(catalogDir, opmBinary(t), probeBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := img.Layers()
	b, _ := again.Layers()
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("catalog images have %d and %d layers, want 3", len(a), len(b))
	}
	for i, what := range []string{"opm and users", "configs"} {
		da, _ := a[i].Digest()
		db, _ := b[i].Digest()
		if da != db {
			t.Errorf("catalog %s layer digests %s and %s from the same input", what, da, db)
		}
	}
	ca, _ := a[2].Digest()
	cb, _ := b[2].Digest()
	t.Logf("catalog cache layer from two builds: %s, %s (equal: %v)", ca, cb, ca == cb)
}
