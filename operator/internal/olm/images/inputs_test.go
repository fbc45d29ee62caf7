package images

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// badInput is a build that must fail, naming path and each of want (the problem and its fix).
type badInput struct {
	name  string
	build func(t *testing.T) (path string, err error)
	want  []string
}

func runBadInputs(t *testing.T, cases []badInput) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, err := tc.build(t)
			if err == nil {
				t.Fatal("built, want an error")
			}
			t.Log(err)
			for _, want := range append(tc.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestBadBundleInputs breaks the fixture bundle one way each.
func TestBadBundleInputs(t *testing.T) {
	annotationsOf := func(dir string) string { return filepath.Join(dir, "metadata", "annotations.yaml") }
	editAnnotations := func(t *testing.T, dir, content string) {
		if err := os.WriteFile(annotationsOf(dir), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runBadInputs(t, []badInput{
		{"bundle without annotations.yaml", func(t *testing.T) (string, error) {
			dir := copyDir(t, fixtureBundle(t))
			if err := os.Remove(annotationsOf(dir)); err != nil {
				t.Fatal(err)
			}
			_, err := BuildBundleImage(dir)
			return annotationsOf(dir), err
		}, []string{"is missing", "make bundle"}},
		{"annotations without the package label", func(t *testing.T) (string, error) {
			dir := copyDir(t, fixtureBundle(t))
			data, _ := os.ReadFile(annotationsOf(dir))
			var kept []string
			for _, line := range strings.Split(string(data), "\n") {
				if !strings.Contains(line, "bundle.package.v1") {
					kept = append(kept, line)
				}
			}
			editAnnotations(t, dir, strings.Join(kept, "\n"))
			_, err := BuildBundleImage(dir)
			return annotationsOf(dir), err
		}, []string{"operators.operatorframework.io.bundle.package.v1 is missing", "make bundle"}},
		{"malformed annotations", func(t *testing.T) (string, error) {
			dir := copyDir(t, fixtureBundle(t))
			editAnnotations(t, dir, "annotations:\n- a list, not a map\n")
			_, err := BuildBundleImage(dir)
			return annotationsOf(dir), err
		}, []string{"malformed", "annotations:"}},
		{"scorecard annotation without its directory", func(t *testing.T) (string, error) {
			dir := copyDir(t, fixtureBundle(t))
			if err := os.RemoveAll(filepath.Join(dir, "tests")); err != nil {
				t.Fatal(err)
			}
			_, err := BuildBundleImage(dir)
			return filepath.Join(dir, "tests", "scorecard"), err
		}, []string{"is missing but", "drop the annotation"}},
		{"symlink in bundle", func(t *testing.T) (string, error) {
			dir := copyDir(t, fixtureBundle(t))
			link := filepath.Join(dir, "manifests", "passwd.yaml")
			if err := os.Symlink("/etc/passwd", link); err != nil {
				t.Fatal(err)
			}
			_, err := BuildBundleImage(dir)
			return link, err
		}, []string{"symbolic link", "copy of its target"}},
	})
}

// TestBadCatalogAndBinaryInputs breaks the catalog, the opm binary, the operator binary and refs.
func TestBadCatalogAndBinaryInputs(t *testing.T) {
	runBadInputs(t, []badInput{
		{"catalog that is not FBC", func(t *testing.T) (string, error) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema":"olm.channel","name":"stable","package":"nope","entries":[{"name":"x"}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := BuildCatalogImage(dir, opmBinary(t), probeBinary(t))
			return dir, err
		}, []string{"not a valid file-based catalog", "make catalog"}},
		{"catalog with broken JSON", func(t *testing.T) (string, error) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema": "olm.package",`), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := BuildCatalogImage(dir, opmBinary(t), probeBinary(t))
			return filepath.Join(dir, "catalog.json"), err
		}, []string{"not a valid file-based catalog", "make catalog"}},
		{"missing catalog directory", func(t *testing.T) (string, error) {
			dir := filepath.Join(t.TempDir(), "catalog")
			_, err := BuildCatalogImage(dir, opmBinary(t), probeBinary(t))
			return dir, err
		}, []string{"does not exist", "make catalog"}},
		{"opm from another operator-registry", func(t *testing.T) (string, error) {
			_, err := BuildCatalogImage(writeFixtureCatalog(t, fixtureBundle(t)), helloBinary(t), probeBinary(t))
			return helloBinary(t), err
		}, []string{"is it opm?", "make tools"}},
		{"operator binary that is not ELF", func(t *testing.T) (string, error) {
			bin := filepath.Join(t.TempDir(), "etcd-operator")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := BuildOperatorImage(bin, OperatorImageOptions{Version: "0.0.1"})
			return bin, err
		}, []string{"not a Linux ELF", "CGO_ENABLED=0"}},
	})
	if _, err := BuildOperatorImage(helloBinary(t), OperatorImageOptions{}); err == nil || !strings.Contains(err.Error(), "Version") {
		t.Errorf("operator image without a version: %v", err)
	}
	if err := Push(empty.Image, "Not A Reference"); err == nil || !strings.Contains(err.Error(), "Not A Reference") {
		t.Errorf("push to a bad reference: %v", err)
	}
}

// TestExtractRefusesEscapes feeds the extractor entries that try to write outside the target
// directory. They go to extractTar directly: mutate.Extract, which Extract reads through, already
// drops some of them (a child of a non-directory), and the guard must not depend on that.
func TestExtractRefusesEscapes(t *testing.T) {
	for name, entries := range map[string][]tar.Header{
		"dot-dot":      {{Name: "../escaped", Typeflag: tar.TypeReg, Mode: 0o644}},
		"through link": {{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "../"}, {Name: "link/escaped", Typeflag: tar.TypeReg, Mode: 0o644}},
		"hardlink out": {{Name: "hard", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}},
		"device entry": {{Name: "dev", Typeflag: tar.TypeChar, Mode: 0o644}},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range entries {
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
			}
			_ = tw.Close()
			parent := t.TempDir()
			if err := extractTar(bytes.NewReader(buf.Bytes()), filepath.Join(parent, "root"), false); err == nil {
				t.Error("extracted, want a refusal")
			}
			if _, err := os.Lstat(filepath.Join(parent, "escaped")); err == nil {
				t.Error("a file was written outside the extraction directory")
			}
		})
	}
	// And through Extract, as Registry.Unpack uses it.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "../escaped", Typeflag: tar.TypeReg, Mode: 0o644})
	_ = tw.Close()
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	if err := Extract(img, filepath.Join(t.TempDir(), "root"), false); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Extract of ../escaped: %v, want a refusal", err)
	}
}
