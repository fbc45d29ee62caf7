package catalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

// Validate loads a file-based catalog and checks it: the upgrade graph (CheckGraph, with messages naming
// the version and the fix), then operator-registry's model validation, as `opm validate` runs it.
func Validate(ctx context.Context, fsys fs.FS) (*declcfg.DeclarativeConfig, error) {
	cfg, err := declcfg.LoadFS(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("load the catalog: %w", err)
	}
	if err := CheckGraph(cfg); err != nil {
		return nil, err
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return nil, fmt.Errorf("operator-registry model: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("operator-registry model: %w", err)
	}
	return cfg, nil
}

// ValidateDir validates the catalog in a directory.
func ValidateDir(ctx context.Context, dir string) (*declcfg.DeclarativeConfig, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("catalog directory: %w; generate it with make catalog", err)
	}
	return Validate(ctx, os.DirFS(dir))
}

// check validates the generated catalog and that the committed directory holds no bundle file the
// record does not list (a stray file would be served as a bundle nobody released).
func (c *Catalog) check(ctx context.Context, dir string, rec *release.Record) error {
	mem := fstest.MapFS{}
	for name, data := range c.Files {
		mem[filepath.ToSlash(name)] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	if _, err := Validate(ctx, mem); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, rec.Package, "bundles"))
	if err != nil {
		return nil // no committed catalog yet
	}
	for _, e := range entries {
		rel := filepath.Join(rec.Package, "bundles", e.Name())
		if _, ok := c.Files[rel]; !ok {
			return fmt.Errorf("%s is not a release in config/releases.yaml; delete the file or add its release (make release)", filepath.Join(dir, rel))
		}
	}
	return nil
}

// BundleObjects returns the manifests a catalog bundle carries inline (its olm.bundle.object
// properties), as JSON.
func BundleObjects(b declcfg.Bundle) ([][]byte, error) {
	var out [][]byte
	for _, p := range b.Properties {
		if p.Type != "olm.bundle.object" {
			continue
		}
		var wrapped struct {
			Data []byte `json:"data"`
		}
		if err := json.Unmarshal(p.Value, &wrapped); err != nil {
			return nil, fmt.Errorf("bundle %s: olm.bundle.object: %w", b.Name, err)
		}
		out = append(out, wrapped.Data)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bundle %s carries no manifests (olm.bundle.object)", b.Name)
	}
	return out, nil
}

// describe gives the package the latest CSV's description and icon, which OperatorHub and
// packagemanifests show.
func describe(pkg *declcfg.Package, rendered *declcfg.DeclarativeConfig) error {
	objs, err := BundleObjects(rendered.Bundles[0])
	if err != nil {
		return err
	}
	for _, data := range objs {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Description string `json:"description"`
				Icon        []struct {
					Data      string `json:"base64data"`
					MediaType string `json:"mediatype"`
				} `json:"icon"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(data, &obj); err != nil || obj.Kind != "ClusterServiceVersion" {
			continue
		}
		pkg.Description = strings.TrimSpace(obj.Spec.Description)
		if len(obj.Spec.Icon) > 0 {
			data, err := base64.StdEncoding.DecodeString(obj.Spec.Icon[0].Data)
			if err != nil {
				return fmt.Errorf("CSV icon: %w", err)
			}
			pkg.Icon = &declcfg.Icon{Data: data, MediaType: obj.Spec.Icon[0].MediaType}
		}
		return nil
	}
	return fmt.Errorf("the rendered bundle has no ClusterServiceVersion object")
}
