package images

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"sigs.k8s.io/yaml"
)

// Scorecard annotations: where the bundle keeps its scorecard tests.
const (
	TestMediatypeLabel = "operators.operatorframework.io.test.mediatype.v1"
	TestConfigLabel    = "operators.operatorframework.io.test.config.v1"
)

// AnnotationsFile is where a bundle keeps the annotations that are also its image's labels.
const AnnotationsFile = "metadata/annotations.yaml"

// bundleDirs are the bundle's directories in the order they are copied, each to the same path at the
// image root. The annotations that name them must agree, since OLM finds the manifests by the label.
var bundleDirs = []struct{ dir, label string }{
	{"manifests", bundle.ManifestsLabel},
	{"metadata", bundle.MetadataLabel},
	{"tests/scorecard", TestConfigLabel},
}

// ReadAnnotations reads and checks bundleDir/metadata/annotations.yaml. It fails, naming the file and
// the fix, when the file is missing or malformed or lacks what OLM and the image need.
func ReadAnnotations(bundleDir string) (map[string]string, error) {
	file := filepath.Join(bundleDir, AnnotationsFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing: a bundle needs its annotations there (make bundle generates them)", file)
	}
	if err != nil {
		return nil, fmt.Errorf("read bundle annotations: %w", err)
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is malformed (%w): it must be a map `annotations:` of string keys to string values", file, err)
	}
	fix := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s (make bundle regenerates the file)", file, fmt.Sprintf(format, a...))
	}
	if len(doc.Annotations) == 0 {
		return nil, fix("no `annotations:` map")
	}
	required := map[string]string{
		bundle.MediatypeLabel: "registry+v1", bundle.ManifestsLabel: "manifests/", bundle.MetadataLabel: "metadata/",
	}
	for key, want := range required {
		if got := doc.Annotations[key]; got != want {
			return nil, fix("annotation %s is %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{bundle.PackageLabel, bundle.ChannelsLabel} {
		if strings.TrimSpace(doc.Annotations[key]) == "" {
			return nil, fix("annotation %s is missing: add `%s: <value>` under annotations:", key, key)
		}
	}
	if v, ok := doc.Annotations[TestConfigLabel]; ok && v != "tests/scorecard/" {
		return nil, fix("annotation %s is %q, want \"tests/scorecard/\"", TestConfigLabel, v)
	}
	return doc.Annotations, nil
}

// BundleImagePaths returns the directories BuildBundleImage copies from bundleDir, which are also
// their paths in the image ("manifests", "metadata" and, when the bundle has scorecard tests,
// "tests/scorecard").
func BundleImagePaths(bundleDir string) ([]string, error) {
	annotations, err := ReadAnnotations(bundleDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, d := range bundleDirs {
		src := filepath.Join(bundleDir, filepath.FromSlash(d.dir))
		info, err := os.Stat(src)
		_, labelled := annotations[d.label]
		switch {
		case err == nil && !info.IsDir():
			return nil, fmt.Errorf("%s is not a directory", src)
		case err == nil:
			paths = append(paths, d.dir)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("bundle directory: %w", err)
		case labelled:
			return nil, fmt.Errorf("%s is missing but %s names it in %s: add the directory or drop the annotation",
				src, d.label, AnnotationsFile)
		}
	}
	return paths, nil
}

// BuildBundleImage builds a registry+v1 bundle image: scratch plus manifests/, metadata/ and
// tests/scorecard/ of bundleDir at the same paths, labelled with metadata/annotations.yaml's
// annotations, as bundle.Dockerfile builds it.
func BuildBundleImage(bundleDir string) (v1.Image, error) {
	annotations, err := ReadAnnotations(bundleDir)
	if err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	paths, err := BundleImagePaths(bundleDir)
	if err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	l := newLayer()
	for _, p := range paths {
		if err := l.tree(filepath.Join(bundleDir, filepath.FromSlash(p)), "/"+p, rootReadOnly); err != nil {
			return nil, fmt.Errorf("bundle image: %w", err)
		}
	}
	labels := make(map[string]string, len(annotations))
	for k, v := range annotations {
		labels[k] = v
	}
	return assemble([]layerSpec{{l, "bundle " + strings.Join(paths, ", ")}}, func(c *v1.Config) {
		c.Labels = labels
	})
}
