// Package operatorhub writes the submission tree for the community operators repository
// (operators/<package>/<version>/{manifests,metadata}, ci.yaml and a basic catalog template) and checks
// it the way the submission pipeline does.
package operatorhub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/bundle"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/catalog"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

// Write lays out every release from the catalog (whose bundles carry their manifests inline) under
// out/operators/<package>/.
func Write(out string, rec *release.Record, cfg *declcfg.DeclarativeConfig) (string, error) {
	pkgDir := filepath.Join(out, "operators", rec.Package)
	if err := os.RemoveAll(pkgDir); err != nil {
		return "", err
	}
	for _, rel := range rec.Releases {
		b, err := findBundle(cfg, rec.CSVName(rel.Version))
		if err != nil {
			return "", err
		}
		dir := filepath.Join(pkgDir, rel.Version)
		if err := writeManifests(filepath.Join(dir, "manifests"), b); err != nil {
			return "", fmt.Errorf("release %s: %w", rel.Version, err)
		}
		ann := bundle.Annotations(rec)
		ann["operators.operatorframework.io.bundle.channels.v1"] = strings.Join(rel.Channels, ",")
		delete(ann, "operators.operatorframework.io.test.mediatype.v1")
		delete(ann, "operators.operatorframework.io.test.config.v1")
		if err := writeYAML(filepath.Join(dir, "metadata", "annotations.yaml"), map[string]any{"annotations": ann}); err != nil {
			return "", err
		}
	}
	if err := writeYAML(filepath.Join(pkgDir, "ci.yaml"), ciConfig()); err != nil {
		return "", err
	}
	if err := writeYAML(filepath.Join(pkgDir, "catalog-templates", "basic.yaml"), basicTemplate(rec, cfg)); err != nil {
		return "", err
	}
	return pkgDir, nil
}

func findBundle(cfg *declcfg.DeclarativeConfig, name string) (declcfg.Bundle, error) {
	for _, b := range cfg.Bundles {
		if b.Name == name {
			return b, nil
		}
	}
	return declcfg.Bundle{}, fmt.Errorf("the catalog has no bundle %s; run make catalog", name)
}

// writeManifests writes each olm.bundle.object back as a file, named by kind and name.
func writeManifests(dir string, b declcfg.Bundle) error {
	objs, err := catalog.BundleObjects(b)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, raw := range objs {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
		data, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s.%s.yaml", obj.Metadata.Name, strings.ToLower(obj.Kind))
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ciConfig enables file-based catalogs for the package in the community pipeline.
func ciConfig() map[string]any {
	return map[string]any{
		"updateGraph": "replaces-mode",
		"reviewers":   []string{"quorumkit"},
		"fbc": map[string]any{
			"enabled": true,
			"catalog_mapping": []map[string]any{{
				"template_name": "basic.yaml",
				"catalog_names": []string{"v4.17", "v4.18", "v4.19"},
				"type":          "olm.template.basic",
			}},
		},
	}
}

// basicTemplate is the olm.template.basic form of the catalog: package, channels, and bundle images.
func basicTemplate(rec *release.Record, cfg *declcfg.DeclarativeConfig) map[string]any {
	var entries []any
	for _, p := range cfg.Packages {
		entries = append(entries, map[string]any{"schema": declcfg.SchemaPackage, "name": p.Name, "defaultChannel": p.DefaultChannel})
	}
	for _, c := range cfg.Channels {
		entries = append(entries, c)
	}
	for _, rel := range rec.Releases {
		entries = append(entries, map[string]any{"schema": declcfg.SchemaBundle, "image": rel.BundleImage})
	}
	return map[string]any{"schema": "olm.template.basic", "entries": entries}
}

func writeYAML(path string, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
