package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/catalog"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

func runCatalog(args []string) error {
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	p := commonFlags(fs)
	validateOnly := fs.String("validate", "", "only validate the file-based catalog in this directory (any catalog, not just ours)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	ctx := context.Background()
	if *validateOnly != "" {
		cfg, err := catalog.ValidateDir(ctx, *validateOnly)
		if err != nil {
			return err
		}
		fmt.Printf("%s is valid: %d packages, %d channels, %d bundles\n", *validateOnly, len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles))
		return nil
	}
	return generateCatalog(ctx, p)
}

func generateCatalog(ctx context.Context, p *paths) error {
	rec, err := release.Load(p.record)
	if err != nil {
		return err
	}
	c, err := catalog.Generate(ctx, catalog.Options{Record: rec, BundleDir: p.bundle, CatalogDir: p.catalog})
	if err != nil {
		return err
	}
	if err := c.Files.Write(p.catalog); err != nil {
		return fmt.Errorf("write %s: %w", p.catalog, err)
	}
	fmt.Printf("wrote %s: package %s, channels %s, %d releases; valid\n", p.catalog, rec.Package, strings.Join(rec.Channels(), ", "), len(rec.Releases))
	return nil
}

func runRelease(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	p := commonFlags(fs)
	version := fs.String("version", "", "the new version, e.g. 0.2.0 (semver, no leading v)")
	channels := fs.String("channels", "", "comma-separated channels (default: the previous release's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	if *version == "" {
		return fmt.Errorf("-version is required: make release VERSION=0.2.0")
	}
	rec, err := release.Load(p.record)
	if err != nil {
		return err
	}
	chans := rec.Latest().Channels
	if *channels != "" {
		chans = strings.Split(*channels, ",")
	}
	ctx := context.Background()
	// Freeze the outgoing release's bundle in the catalog exactly as it is now.
	if err := generateCatalog(ctx, p); err != nil {
		return fmt.Errorf("refresh the catalog before the release: %w", err)
	}
	if err := rec.Add(*version, chans); err != nil {
		return err
	}
	if err := rec.Save(p.record); err != nil {
		return err
	}
	if err := setManagerImageTag(p.root, "v"+*version); err != nil {
		return err
	}
	if err := generateBundle(p); err != nil {
		return err
	}
	if err := generateCatalog(ctx, p); err != nil {
		return err
	}
	fmt.Printf("released %s: commit config/, bundle/ and catalog/, then build and push the images (make images REGISTRY=...)\n", *version)
	return nil
}

// setManagerImageTag keeps the plain kustomize install (make render) on the released image.
func setManagerImageTag(root, tag string) error {
	path := filepath.Join(root, "config", "manager", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "newTag:") {
			line = line[:strings.Index(line, "newTag:")] + "newTag: " + tag
		}
		out = append(out, line)
	}
	return os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
}

// runVerify regenerates the bundle and catalog in memory and fails if the committed ones differ.
func runVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	p := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	rec, b, err := freshBundle(p)
	if err != nil {
		return err
	}
	if err := b.Files.Same(p.bundle); err != nil {
		return fmt.Errorf("bundle/ differs from a fresh generation (%w); run make bundle and commit it", err)
	}
	c, err := catalog.Generate(context.Background(), catalog.Options{Record: rec, BundleDir: p.bundle, CatalogDir: p.catalog})
	if err != nil {
		return err
	}
	if err := c.Files.Same(p.catalog); err != nil {
		return fmt.Errorf("catalog/ differs from a fresh generation (%w); run make catalog and commit it", err)
	}
	if err := validateBundle(p.bundle); err != nil {
		return err
	}
	fmt.Println("bundle/ and catalog/ match their sources")
	return nil
}
