package images

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushAndPull pushes img as ref to the in-process registry, pulls it back and checks the digest.
func pushAndPull(t *testing.T, img v1.Image, ref string) v1.Image {
	t.Helper()
	if err := Push(img, ref); err != nil {
		t.Fatalf("push: %v", err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	want, _ := img.Digest()
	got, err := pulled.Digest()
	if err != nil || got != want {
		t.Fatalf("pulled %s digest %v (err %v), pushed %v", ref, got, err, want)
	}
	size, _ := compressedSize(pulled)
	t.Logf("%s: %s, %d bytes compressed", ref, got, size)
	return pulled
}

func compressedSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

func config(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Equal(epoch) {
		t.Errorf("platform %s/%s created %v, want linux/%s at the epoch", cf.OS, cf.Architecture, cf.Created, runtime.GOARCH)
	}
	return cf
}

// sameTree fails unless the image holds exactly the files of dir under prefix, byte for byte.
func sameTree(t *testing.T, files map[string]imageFile, dir, prefix string) {
	t.Helper()
	var want []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		key := filepath.ToSlash(filepath.Join(prefix, rel))
		want = append(want, key)
		data, _ := os.ReadFile(p)
		f, ok := files[key]
		if !ok || !bytes.Equal(f.data, data) {
			t.Errorf("image file /%s missing or different from %s", key, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k, f := range files {
		if strings.HasPrefix(k, prefix+"/") && f.hdr.Typeflag != '5' {
			got = append(got, k)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("image files under /%s: %q, want %q", prefix, got, want)
	}
}

func TestOperatorImageThroughRegistry(t *testing.T) {
	bin := helloBinary(t)
	img, err := BuildOperatorImage(bin, OperatorImageOptions{Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, startRegistry(t)+"/quorumkit/etcd-operator:v0.0.1")
	c := config(t, pulled).Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/etcd-operator"}) || c.WorkingDir != "/" {
		t.Errorf("user %q entrypoint %q workdir %q", c.User, c.Entrypoint, c.WorkingDir)
	}
	wantLabels := map[string]string{LabelTitle: "etcd-operator", LabelVersion: "0.0.1",
		LabelSource: "https://github.com/quorumkit/etcd-operator", LabelLicenses: "Apache-2.0"}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Labels[k], v)
		}
	}
	files := imageFiles(t, pulled)
	binData, _ := os.ReadFile(bin)
	if f := files["etcd-operator"]; !bytes.Equal(f.data, binData) || f.hdr.Mode != 0o755 || f.hdr.Uid != 0 {
		t.Errorf("/etcd-operator: mode %o uid %d, %d bytes; want the binary, 0755, root", f.hdr.Mode, f.hdr.Uid, len(f.data))
	}
	if !bytes.Contains(files["etc/passwd"].data, []byte("nonroot:x:65532:65532:")) ||
		!bytes.Contains(files["etc/group"].data, []byte("nonroot:x:65532:")) {
		t.Errorf("/etc/passwd or /etc/group lacks the nonroot user 65532")
	}
	_, hostCerts := os.Stat(DefaultCACertsPath)
	if _, inImage := files["etc/ssl/certs/ca-certificates.crt"]; inImage != (hostCerts == nil) {
		t.Errorf("CA bundle in image: %v, on this machine: %v", inImage, hostCerts == nil)
	}
	for k, f := range files {
		if !f.hdr.ModTime.Equal(epoch) {
			t.Errorf("/%s has mtime %v, want the epoch", k, f.hdr.ModTime)
		}
	}
}

func TestBundleImageThroughRegistry(t *testing.T) {
	dir := fixtureBundle(t)
	img, err := BuildBundleImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, startRegistry(t)+"/quorumkit/etcd-operator-bundle:v0.0.1")
	annotations, err := ReadAnnotations(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := config(t, pulled).Config.Labels; !mapsEqual(got, annotations) || len(got) != 8 {
		t.Errorf("labels %v, want the 8 annotations %v", got, annotations)
	}
	files := imageFiles(t, pulled)
	for _, p := range []string{"manifests", "metadata", "tests/scorecard"} {
		sameTree(t, files, filepath.Join(dir, p), p)
	}
	for k := range files {
		if top, _, _ := strings.Cut(k, "/"); top != "manifests" && top != "metadata" && top != "tests" {
			t.Errorf("unexpected /%s in the bundle image", k)
		}
	}
}

func TestCatalogImageThroughRegistry(t *testing.T) {
	dir, img := fixtureCatalogImage(t)
	pulled := pushAndPull(t, img, startRegistry(t)+"/quorumkit/etcd-operator-catalog:v0.0.1")
	c := config(t, pulled).Config
	if c.Labels[ConfigsLabel] != "/configs" || c.User != "65532" {
		t.Errorf("labels %v user %q", c.Labels, c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/bin/opm"}) ||
		!slices.Equal(c.Cmd, []string{"serve", "/configs", "--cache-dir=/tmp/cache", "--cache-enforce-integrity"}) {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["50051/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 50051/tcp", c.ExposedPorts)
	}
	files := imageFiles(t, pulled)
	sameTree(t, files, dir, "configs")
	if f := files["bin/opm"]; f.hdr.Mode != 0o755 || f.hdr.Size < 1<<20 {
		t.Errorf("/bin/opm mode %o size %d", f.hdr.Mode, f.hdr.Size)
	}
	if f := files["bin/grpc_health_probe"]; f.hdr.Mode != 0o755 || f.hdr.Size < 1<<20 {
		t.Errorf("/bin/grpc_health_probe (OLM v0 probes catalog Pods with it) mode %o size %d", f.hdr.Mode, f.hdr.Size)
	}
	if f := files["tmp"]; f.hdr.Mode != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", f.hdr.Mode)
	}
	digest, ok := files["tmp/cache/pogreb.v1/digest"]
	if !ok || len(digest.data) == 0 || digest.hdr.Uid != NonRootUID || digest.hdr.Gid != 0 || digest.hdr.Mode != 0o660 {
		t.Errorf("cache digest file: present %v, uid %d gid %d mode %o; want 65532, 0, 0660", ok, digest.hdr.Uid, digest.hdr.Gid, digest.hdr.Mode)
	}
	if f := files["tmp/cache"]; f.hdr.Uid != NonRootUID || f.hdr.Mode != 0o770 {
		t.Errorf("/tmp/cache uid %d mode %o, want 65532 0770", f.hdr.Uid, f.hdr.Mode)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
