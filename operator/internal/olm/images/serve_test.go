package images

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/client"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"
	health "google.golang.org/grpc/health/grpc_health_v1"
)

// checkCatalogServer asks a catalog server what OLM v0's catalog operator asks: health, the package
// list, the package's channels and default channel, and the bundle at the channel head.
func checkCatalogServer(t *testing.T, ctx context.Context, c *client.Client, pkgName, channel, csv string) {
	t.Helper()
	if ok, err := c.HealthCheck(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("health check: serving %v, err %v", ok, err)
	}
	stream, err := c.Registry.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		t.Fatalf("ListPackages: %v", err)
	}
	var names []string
	for {
		n, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("ListPackages: %v", err)
		}
		names = append(names, n.GetName())
	}
	if len(names) != 1 || names[0] != pkgName {
		t.Errorf("ListPackages: %q, want [%q]", names, pkgName)
	}
	pkg, err := c.GetPackage(ctx, pkgName)
	if err != nil {
		t.Fatalf("GetPackage %s: %v", pkgName, err)
	}
	head := ""
	for _, ch := range pkg.GetChannels() {
		if ch.GetName() == channel {
			head = ch.GetCsvName()
		}
	}
	if pkg.GetDefaultChannelName() != channel || head != csv {
		t.Errorf("GetPackage: default channel %q, %s head %q; want %q and %q", pkg.GetDefaultChannelName(), channel, head, channel, csv)
	}
	b, err := c.GetBundle(ctx, pkgName, channel, head)
	if err != nil {
		t.Fatalf("GetBundle %s/%s/%s: %v", pkgName, channel, head, err)
	}
	if b.GetCsvName() != csv || b.GetPackageName() != pkgName || !strings.Contains(b.GetCsvJson(), `"name":"`+csv+`"`) || len(b.GetObject()) < 2 {
		t.Errorf("GetBundle: csv %q package %q, %d objects, csvJson %d bytes", b.GetCsvName(), b.GetPackageName(), len(b.GetObject()), len(b.GetCsvJson()))
	}
}

// TestServeCatalogImageCache serves the catalog image's own /configs and /tmp/cache the way
// `opm serve` does, in process: the shipped cache must pass the integrity check as is (a rebuild in
// the Pod is what the image exists to avoid) and must fail it for a changed catalog.
func TestServeCatalogImageCache(t *testing.T) {
	_, img := fixtureCatalogImage(t)
	root := t.TempDir()
	if err := Extract(img, root, false); err != nil {
		t.Fatal(err)
	}
	configs, cacheDir := filepath.Join(root, "configs"), filepath.Join(root, "tmp", "cache")
	ctx := context.Background()

	tampered := copyDir(t, configs)
	file := filepath.Join(tampered, fixturePackage, "catalog.yaml")
	data, _ := os.ReadFile(file)
	changed := bytes.Replace(data, []byte("etcd operator test fixture"), []byte("changed description"), 1)
	if bytes.Equal(changed, data) {
		t.Fatalf("%s has no description to change", file)
	}
	if err := os.WriteFile(file, changed, 0o644); err != nil {
		t.Fatal(err)
	}

	digestFile := filepath.Join(cacheDir, "pogreb.v1", "digest")
	digest, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatalf("the image's cache has no pogreb digest: %v", err)
	}
	c, err := cache.New(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.CheckIntegrity(ctx, os.DirFS(tampered)); err == nil {
		t.Error("the image's cache passed the integrity check against a changed catalog")
	}
	if err := c.CheckIntegrity(ctx, os.DirFS(configs)); err != nil {
		t.Fatalf("the image's cache fails the integrity check against its own /configs: %v", err)
	}
	if err := c.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(digestFile); !bytes.Equal(after, digest) {
		t.Errorf("loading the cache rewrote its digest: %q -> %q", digest, after)
	}

	cl := serveInProcess(t, c)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	checkCatalogServer(t, ctx, cl, fixturePackage, "stable", fixtureCSV)
}

// startCatalogServer serves c on a loopback port with the registry and health services, as opm serve
// registers them, and returns the address.
func startCatalogServer(t *testing.T, c cache.Cache) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterRegistryServer(srv, server.NewRegistryServer(c))
	health.RegisterHealthServer(srv, server.NewHealthServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}
