package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/images"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

func runImages(args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	p := commonFlags(fs)
	out := fs.String("out", filepath.Join("build", "images"), "directory for the OCI image layouts")
	registry := fs.String("registry", "", "push to this registry and path instead of the release record's repositories, e.g. 127.0.0.1:5000/quorumkit")
	operatorBinary := fs.String("operator-binary", filepath.Join("bin", "etcd-operator"), "the static operator binary (make build)")
	opm := fs.String("opm", filepath.Join("bin", "opm"), "opm for the catalog image (make tools)")
	probe := fs.String("probe", filepath.Join("bin", "grpc_health_probe"), "grpc_health_probe for the catalog image (make tools)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	rec, err := release.Load(p.record)
	if err != nil {
		return err
	}
	latest := rec.Latest()
	built := []struct {
		name, ref string
		build     func() (v1.Image, error)
	}{
		{"operator", rec.OperatorImageRef(latest.Version), func() (v1.Image, error) {
			return images.BuildOperatorImage(*operatorBinary, images.OperatorImageOptions{Version: latest.Version})
		}},
		{"bundle", latest.BundleImage, func() (v1.Image, error) { return images.BuildBundleImage(p.bundle) }},
		{"catalog", fmt.Sprintf("%s:v%s", rec.CatalogImage, latest.Version), func() (v1.Image, error) {
			return images.BuildCatalogImage(p.catalog, *opm, *probe)
		}},
	}
	for _, b := range built {
		img, err := b.build()
		if err != nil {
			return fmt.Errorf("%s image: %w", b.name, err)
		}
		ref := b.ref
		if *registry != "" {
			ref = strings.TrimSuffix(*registry, "/") + "/" + ref[strings.LastIndex(ref, "/")+1:]
		}
		if err := images.WriteLayout(filepath.Join(*out, b.name), img, ref); err != nil {
			return err
		}
		size, digest, err := describeImage(img)
		if err != nil {
			return err
		}
		fmt.Printf("%-8s %s  %s  %d bytes compressed  (layout: %s)\n", b.name, ref, digest, size, filepath.Join(*out, b.name))
		if *registry != "" {
			if err := images.Push(img, ref); err != nil {
				return fmt.Errorf("push %s: %w", ref, err)
			}
			fmt.Printf("         pushed %s\n", ref)
		}
	}
	return nil
}

// describeImage returns the compressed size (manifest, config and layers) and the digest.
func describeImage(img v1.Image) (int64, v1.Hash, error) {
	digest, err := img.Digest()
	if err != nil {
		return 0, v1.Hash{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, v1.Hash{}, err
	}
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, digest, nil
}
