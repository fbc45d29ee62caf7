package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/operator-framework/operator-registry/alpha/action"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/quorumkit/etcd-operator/operator/internal/repo"
)

// The fixture bundle in testdata/bundle: package etcd-operator, one CSV and one CRD.
const (
	fixturePackage = "etcd-operator"
	fixtureCSV     = "etcd-operator.v0.0.1"
	fixtureImage   = "quay.io/quorumkit/etcd-operator-bundle:v0.0.1"
)

// repoRoot is the directory of the root go.mod, found upwards from the package directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func fixtureBundle(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies a directory tree of regular files, for tests that break a fixture.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// writeFixtureCatalog renders bundleDir with operator-registry and writes a file-based catalog of it
// into a new directory: the package with default channel stable, the channel with the one bundle.
func writeFixtureCatalog(t *testing.T, bundleDir string) string {
	t.Helper()
	cfg, err := action.Render{Refs: []string{bundleDir}, AllowedRefMask: action.RefBundleDir, Registry: NewRegistry()}.Run(context.Background())
	if err != nil {
		t.Fatalf("render fixture bundle: %v", err)
	}
	if len(cfg.Bundles) != 1 {
		t.Fatalf("rendered %d bundles from %s, want 1", len(cfg.Bundles), bundleDir)
	}
	cfg.Bundles[0].Image = fixtureImage
	cfg.Packages = []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: fixturePackage, DefaultChannel: "stable",
		Description: "etcd operator test fixture"}}
	cfg.Channels = []declcfg.Channel{{Schema: declcfg.SchemaChannel, Name: "stable", Package: fixturePackage,
		Entries: []declcfg.ChannelEntry{{Name: cfg.Bundles[0].Name}}}}
	dir := filepath.Join(t.TempDir(), "catalog")
	writeCatalog(t, dir, *cfg)
	return dir
}

func writeCatalog(t *testing.T, dir string, cfg declcfg.DeclarativeConfig) {
	t.Helper()
	var buf bytes.Buffer
	if err := declcfg.WriteYAML(cfg, &buf); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, fixturePackage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fixturePackage, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

var hello struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// helloBinary builds testdata/hello as a static Linux binary, standing in for the operator binary.
func helloBinary(t *testing.T) string {
	t.Helper()
	hello.once.Do(func() {
		hello.path = filepath.Join(sharedDir, "hello")
		cmd := exec.Command("go", "build", "-trimpath", "-o", hello.path, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		hello.out, hello.err = cmd.CombinedOutput()
	})
	if hello.err != nil {
		t.Fatalf("build testdata/hello: %v\n%s", hello.err, hello.out)
	}
	return hello.path
}

// opmBinary is the repository's bin/opm, which the catalog image ships.
func opmBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "bin", "opm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): run `make tools` (it builds opm from operator/tools/opm)", p, err)
	}
	return p
}

// probeBinary is the repository's bin/grpc_health_probe, which the catalog image ships for OLM v0's probes.
func probeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "bin", "grpc_health_probe")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): run `make tools` (it builds operator/cmd/grpc-health-probe)", p, err)
	}
	return p
}

var catalogFixture struct {
	once sync.Once
	dir  string
	img  v1.Image
	err  error
}

// fixtureCatalogImage builds the catalog image of the fixture catalog once for all tests: with a
// 100 MB opm it is the slowest thing here.
func fixtureCatalogImage(t *testing.T) (catalogDir string, img v1.Image) {
	t.Helper()
	opm := opmBinary(t)
	catalogFixture.once.Do(func() {
		// Stays the error if writeFixtureCatalog ends this test with t.Fatal inside the Once.
		catalogFixture.err = errors.New("writing the fixture catalog failed in an earlier test")
		src := writeFixtureCatalog(t, fixtureBundle(t))
		catalogFixture.dir = filepath.Join(sharedDir, "catalog")
		catalogFixture.err = os.CopyFS(catalogFixture.dir, os.DirFS(src))
		if catalogFixture.err == nil {
			catalogFixture.img, catalogFixture.err = BuildCatalogImage(catalogFixture.dir, opm, probeBinary(t))
		}
	})
	if catalogFixture.err != nil {
		t.Fatalf("build fixture catalog image: %v", catalogFixture.err)
	}
	return catalogFixture.dir, catalogFixture.img
}

// startRegistry serves an in-memory OCI registry on a loopback port and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// imageFile is one entry of an image's flattened filesystem.
type imageFile struct {
	hdr  tar.Header
	data []byte
}

// imageFiles reads the flattened filesystem of img, keyed by path without leading slash.
func imageFiles(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	files := map[string]imageFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("read image filesystem: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(hdr.Name, "/")] = imageFile{hdr: *hdr, data: data}
	}
}

// sharedDir holds what tests build once: the hello binary and the fixture catalog.
var sharedDir string

func TestMain(m *testing.M) {
	var err error
	if sharedDir, err = os.MkdirTemp("", "images-test-"); err != nil {
		log.Fatal(err)
	}
	code := m.Run()
	_ = os.RemoveAll(sharedDir)
	os.Exit(code)
}
