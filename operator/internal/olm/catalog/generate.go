package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/action"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/image"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/filetree"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

// Options say what to generate.
type Options struct {
	Record *release.Record
	// BundleDir holds the latest release's bundle (bundle/).
	BundleDir string
	// CatalogDir is the committed catalog: released bundles other than the latest are read from it, since
	// a released bundle never changes.
	CatalogDir string
}

// Catalog is a generated file-based catalog: file paths relative to the catalog root, with their YAML.
type Catalog struct {
	Files filetree.Files
}

// Generate builds the catalog: the package, its channels from the release record, the latest bundle
// rendered from BundleDir, and the earlier bundles as committed. It validates the result.
func Generate(ctx context.Context, opts Options) (*Catalog, error) {
	rec := opts.Record
	latest := rec.Latest()
	rendered, err := renderBundle(ctx, opts.BundleDir, latest.BundleImage)
	if err != nil {
		return nil, err
	}
	c := &Catalog{Files: filetree.Files{}}
	for _, rel := range rec.Releases[:len(rec.Releases)-1] {
		path := bundleFile(rec, rel.Version)
		data, err := os.ReadFile(filepath.Join(opts.CatalogDir, path))
		if err != nil {
			return nil, fmt.Errorf("release %s has no bundle in the catalog (%w); released bundles are kept in %s and never regenerated: restore the file from git history",
				rel.Version, err, filepath.Join(opts.CatalogDir, path))
		}
		c.Files[path] = data
	}
	if c.Files[bundleFile(rec, latest.Version)], err = toYAML(declcfg.DeclarativeConfig{Bundles: rendered.Bundles}); err != nil {
		return nil, err
	}
	pkg := declcfg.Package{Schema: declcfg.SchemaPackage, Name: rec.Package, DefaultChannel: rec.DefaultChannel}
	if err := describe(&pkg, rendered); err != nil {
		return nil, err
	}
	if c.Files[filepath.Join(rec.Package, "package.yaml")], err = toYAML(declcfg.DeclarativeConfig{Packages: []declcfg.Package{pkg}}); err != nil {
		return nil, err
	}
	if c.Files[filepath.Join(rec.Package, "channels.yaml")], err = toYAML(declcfg.DeclarativeConfig{Channels: Channels(rec)}); err != nil {
		return nil, err
	}
	if err := c.check(ctx, opts.CatalogDir, rec); err != nil {
		return nil, err
	}
	return c, nil
}

// Channels builds one channel per name in the record: each release replaces the previous release of
// the same channel, and its skipRange lets any older release upgrade to it directly.
func Channels(rec *release.Record) []declcfg.Channel {
	var out []declcfg.Channel
	for _, name := range rec.Channels() {
		ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: rec.Package, Name: name}
		prev := ""
		for _, rel := range rec.Releases {
			if !slices.Contains(rel.Channels, name) {
				continue
			}
			csv := rec.CSVName(rel.Version)
			ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: csv, Replaces: prev, SkipRange: rec.SkipRange(rel.Version)})
			prev = csv
		}
		out = append(out, ch)
	}
	return out
}

func bundleFile(rec *release.Record, version string) string {
	return filepath.Join(rec.Package, "bundles", "v"+version+".yaml")
}

// renderBundle renders a bundle directory into an olm.bundle with its manifests inline
// (olm.bundle.object), so that OLM and packagemanifests can read it without pulling the image.
func renderBundle(ctx context.Context, dir, imageRef string) (*declcfg.DeclarativeConfig, error) {
	cfg, err := action.Render{Refs: []string{dir}, AllowedRefMask: action.RefBundleDir, Registry: noRegistry{}}.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("render bundle %s: %w", dir, err)
	}
	if len(cfg.Bundles) != 1 {
		return nil, fmt.Errorf("render bundle %s: got %d bundles, want 1", dir, len(cfg.Bundles))
	}
	cfg.Bundles[0].Image = imageRef
	return cfg, nil
}

func toYAML(cfg declcfg.DeclarativeConfig) ([]byte, error) {
	var buf bytes.Buffer
	if err := declcfg.WriteYAML(cfg, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// noRegistry refuses image pulls: the catalog is rendered from directories only, and the default
// registry would set up an on-disk image store nobody needs.
type noRegistry struct{}

var errNoPull = errors.New("catalog generation renders bundle directories only and pulls no image")

func (noRegistry) Pull(context.Context, image.Reference) error           { return errNoPull }
func (noRegistry) Unpack(context.Context, image.Reference, string) error { return errNoPull }
func (noRegistry) Labels(context.Context, image.Reference) (map[string]string, error) {
	return nil, errNoPull
}
func (noRegistry) Destroy() error { return nil }
