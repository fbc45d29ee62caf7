package images

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/containertools"
)

// Where the catalog image keeps things, as `opm generate dockerfile` lays it out.
const (
	CatalogConfigsDir = "/configs"
	CatalogCacheDir   = "/tmp/cache"
	CatalogOpmPath    = "/bin/opm"
	// CatalogProbePath is where OLM v0's catalog Pod probes look for grpc_health_probe (on PATH).
	CatalogProbePath = "/bin/grpc_health_probe"
	// ConfigsLabel tells OLM v1's catalogd (and opm render) where the file-based catalog is.
	ConfigsLabel = containertools.ConfigsLocationLabel
	// CatalogPort is the gRPC port OLM v0 expects its catalog pods to serve on.
	CatalogPort = "50051/tcp"
)

// RegistryModule is the module whose pkg/cache builds the catalog cache and whose opm serves it.
const RegistryModule = "github.com/operator-framework/operator-registry"

// CatalogEntrypoint is the catalog image's entrypoint.
func CatalogEntrypoint() []string { return []string{CatalogOpmPath} }

// CatalogCmd is the catalog image's command. --cache-enforce-integrity makes opm exit, rather than
// rebuild the cache in a Pod that may not be able to write it, when the shipped cache does not match
// /configs or was built by another operator-registry version. opm v1.65.0 already enforces this by
// default whenever --cache-dir is set without --cache-only; saying so keeps it if that default moves.
func CatalogCmd() []string {
	return []string{"serve", CatalogConfigsDir, "--cache-dir=" + CatalogCacheDir, "--cache-enforce-integrity"}
}

// nsswitch is what the opm image ships: Go's resolver reads it, and opm serve tries to write it when absent.
var nsswitch = []byte("hosts: files dns\n")

// hosts names localhost. opm serve listens for pprof on localhost:6060 by default and exits when it
// cannot resolve the name; the kubelet and Docker mount an /etc/hosts over this one, but a runtime
// that does not (or a chroot) would otherwise leave opm unable to start.
var hosts = []byte("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")

// BuildCatalogImage builds the catalog image from the file-based catalog in catalogDir and the opm
// binary at opmBinary (bin/opm, built from operator/tools/opm). Layers, from least to most often changed:
//   - /bin/opm, /etc/passwd, /etc/group, /etc/nsswitch.conf, /etc/hosts and /tmp (1777);
//   - /configs: the catalog tree;
//   - /tmp/cache: the serve cache, built here with operator-registry's pkg/cache from the same tree,
//     owned by 65532 with group 0 and group-writable (opm opens it read-write; OpenShift runs images
//     under an arbitrary UID in group 0).
//
// It runs `opm serve /configs --cache-dir=/tmp/cache --cache-enforce-integrity` as user 65532 on
// port 50051 and carries the label operators.operatorframework.io.index.configs.v1=/configs.
//
// The cache only passes opm's integrity check when opm's operator-registry version equals the one
// linked into this program, so that is checked from both binaries' build info. The cache's database
// embeds a random hash seed, so that one layer differs from build to build; the others are reproducible.
//
// probeBinary (bin/grpc_health_probe, from operator/cmd/grpc-health-probe) goes to /bin/grpc_health_probe:
// OLM v0 probes catalog Pods with `grpc_health_probe -addr=:50051`.
func BuildCatalogImage(catalogDir, opmBinary, probeBinary string) (v1.Image, error) {
	ctx := context.Background()
	if err := checkCatalog(ctx, catalogDir); err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	if err := checkStaticBinary(opmBinary); err != nil {
		return nil, fmt.Errorf("catalog image: opm: %w (make tools builds bin/opm)", err)
	}
	if err := checkOpmVersion(opmBinary); err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	if err := checkStaticBinary(probeBinary); err != nil {
		return nil, fmt.Errorf("catalog image: grpc_health_probe: %w (make tools builds bin/grpc_health_probe)", err)
	}
	base := newLayer()
	addUsers(base)
	base.file("/etc/nsswitch.conf", nsswitch, 0o644, 0, 0)
	base.file("/etc/hosts", hosts, 0o644, 0, 0)
	base.dir("/tmp", 0o1777, 0, 0)
	if err := base.diskFile(CatalogOpmPath, opmBinary, 0o755, 0, 0); err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	if err := base.diskFile(CatalogProbePath, probeBinary, 0o755, 0, 0); err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	configs := newLayer()
	if err := configs.tree(catalogDir, CatalogConfigsDir, rootReadOnly); err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	cached, err := cacheLayer(ctx, catalogDir)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	user := strconv.Itoa(NonRootUID)
	return assemble([]layerSpec{
		{base, "opm " + RegistryModule + " serve binary and users"},
		{configs, "file-based catalog in " + CatalogConfigsDir},
		{cached, "serve cache in " + CatalogCacheDir + " built by " + RegistryModule + "/pkg/cache"},
	}, func(c *v1.Config) {
		c.User = user
		c.Entrypoint = CatalogEntrypoint()
		c.Cmd = CatalogCmd()
		c.WorkingDir = "/"
		c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		c.ExposedPorts = map[string]struct{}{CatalogPort: {}}
		c.Labels = map[string]string{ConfigsLabel: CatalogConfigsDir}
	})
}

// checkCatalog loads catalogDir as opm validate does, so an invalid catalog fails here with the reason
// rather than in a crash-looping catalog Pod.
func checkCatalog(ctx context.Context, catalogDir string) error {
	fix := "fix it and check with `make catalog`, which regenerates and validates catalog/"
	if info, err := os.Stat(catalogDir); err != nil || !info.IsDir() {
		return fmt.Errorf("catalog directory %s does not exist or is not a directory: %s", catalogDir, fix)
	}
	fsys := os.DirFS(catalogDir)
	cfg, err := declcfg.LoadFS(ctx, fsys)
	if err != nil {
		// LoadFS does not always say which file; walking the files one by one does.
		_ = declcfg.WalkMetasFS(ctx, fsys, func(path string, _ *declcfg.Meta, werr error) error {
			if werr != nil {
				err = fmt.Errorf("%s: %w", filepath.Join(catalogDir, path), werr)
			}
			return werr
		})
		return fmt.Errorf("%s is not a valid file-based catalog: %w; %s", catalogDir, err, fix)
	}
	model, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return fmt.Errorf("%s is not a valid file-based catalog: %w; %s", catalogDir, err, fix)
	}
	if len(model) == 0 {
		return fmt.Errorf("%s holds no olm.package: %s", catalogDir, fix)
	}
	return nil
}

// cacheLayer builds the serve cache for catalogDir in a temporary directory and puts it in a layer.
func cacheLayer(ctx context.Context, catalogDir string) (*layerBuilder, error) {
	dir, err := os.MkdirTemp("", "catalog-cache-")
	if err != nil {
		return nil, fmt.Errorf("serve cache: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := BuildCache(ctx, catalogDir, dir); err != nil {
		return nil, err
	}
	l := newLayer()
	// Repeat /tmp as the base layer has it: a layer's parent entry replaces the one below it.
	l.dir("/tmp", 0o1777, 0, 0)
	if err := l.tree(dir, CatalogCacheDir, perms{dirMode: 0o770, fileMode: 0o660, uid: NonRootUID, gid: 0}); err != nil {
		return nil, fmt.Errorf("serve cache: %w", err)
	}
	return l, nil
}

// BuildCache builds opm's serve cache for the catalog in catalogDir into cacheDir (empty or absent),
// the way `opm serve --cache-only` does, and closes it so its files are complete.
func BuildCache(ctx context.Context, catalogDir, cacheDir string) (err error) {
	c, err := cache.New(cacheDir)
	if err != nil {
		return fmt.Errorf("serve cache in %s: %w", cacheDir, err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close serve cache in %s: %w", cacheDir, cerr)
		}
	}()
	if err := cache.LoadOrRebuild(ctx, c, os.DirFS(catalogDir)); err != nil {
		return fmt.Errorf("build serve cache for %s: %w", catalogDir, err)
	}
	return nil
}

// registryVersion is the operator-registry version a binary was built from, "" when it has none.
func registryVersion(bi *debug.BuildInfo) string {
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path == RegistryModule {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// LinkedRegistryVersion is the operator-registry version linked into this program: the pkg/cache that
// BuildCatalogImage builds caches with.
func LinkedRegistryVersion() (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := registryVersion(bi); v != "" && v != "(devel)" {
			return v, nil
		}
	}
	// Test binaries carry no dependency build info (golang/go#33976), but the source path compiled
	// into pkg/cache's code still names the module version: .../operator-registry@v1.65.0/pkg/cache/...
	file, _ := runtime.FuncForPC(reflect.ValueOf(cache.New).Pointer()).FileLine(0)
	if _, rest, ok := strings.Cut(filepath.ToSlash(file), RegistryModule+"@"); ok {
		if v, _, _ := strings.Cut(rest, "/"); v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("cannot tell which %s version this program links (its pkg/cache is at %s): "+
		"build it in module mode without a replace of that module", RegistryModule, file)
}

// checkOpmVersion fails unless opm was built from the operator-registry version linked here.
func checkOpmVersion(opmBinary string) error {
	own, err := LinkedRegistryVersion()
	if err != nil {
		return err
	}
	bi, err := buildinfo.ReadFile(opmBinary)
	if err != nil {
		return fmt.Errorf("read build info of opm %s: %w", opmBinary, err)
	}
	theirs := registryVersion(bi)
	if theirs == "" {
		return fmt.Errorf("%s is not built from %s: is it opm? make tools builds bin/opm from operator/tools/opm/go.mod", opmBinary, RegistryModule)
	}
	if theirs != own {
		return fmt.Errorf("opm %s is built from %s %q but the cache is built with %s: opm rejects a cache built by "+
			"another version; pin %s in operator/tools/opm/go.mod and rebuild with make tools", opmBinary, RegistryModule, theirs, own, own)
	}
	return nil
}
