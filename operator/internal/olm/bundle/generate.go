// Package bundle generates the OLM bundle (bundle/): a ClusterServiceVersion assembled from the hand-kept
// base in config/manifests and the rendered operator install, the CRDs, extra RBAC, annotations and the
// scorecard configuration.
package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/quorumkit/etcd-operator/operator/internal/kustomize"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/filetree"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

// Options say what to generate.
type Options struct {
	// Root is the repository root: config/ is read from it.
	Root string
	// Record is the release record; the bundle is for its latest release.
	Record *release.Record
	// Previous is the bundle directory generated before, if any: its createdAt is kept when nothing else
	// changed, so regenerating an unchanged bundle changes nothing.
	Previous string
	// Now stamps createdAt when the content changed.
	Now func() time.Time
}

// Bundle is a generated bundle: file paths relative to the bundle root, and their contents.
type Bundle struct {
	Files filetree.Files
	CSV   *operatorsv1alpha1.ClusterServiceVersion
}

const (
	csvFile       = "manifests/etcd-operator.clusterserviceversion.yaml"
	createdAtKey  = "createdAt"
	createdFormat = "2006-01-02T15:04:05Z"
)

// Generate renders config/manifests and assembles the bundle for the record's latest release.
func Generate(opts Options) (*Bundle, error) {
	objs, err := kustomize.Render(filepath.Join(opts.Root, "config", "manifests"))
	if err != nil {
		return nil, err
	}
	p, err := classify(objs)
	if err != nil {
		return nil, err
	}
	icon, err := os.ReadFile(filepath.Join(opts.Root, "config", "manifests", "bases", "icon.svg"))
	if err != nil {
		return nil, fmt.Errorf("read the CSV icon: %w", err)
	}
	latest := opts.Record.Latest()
	csv, err := buildCSV(p, csvInputs{record: opts.Record, version: latest.Version, iconSVG: icon})
	if err != nil {
		return nil, err
	}
	b := &Bundle{Files: filetree.Files{}, CSV: csv}
	if err := b.addManifests(p); err != nil {
		return nil, err
	}
	b.Files["metadata/annotations.yaml"] = annotationsYAML(opts.Record)
	b.Files["tests/scorecard/config.yaml"] = []byte(scorecardConfig)
	if err := b.stampCreatedAt(opts); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bundle) addManifests(p *parts) error {
	for _, crd := range p.crds {
		data, err := marshal(crd.Object)
		if err != nil {
			return err
		}
		b.Files["manifests/"+crd.GetName()+".yaml"] = data
	}
	_, _, roles, clusterRoles, err := p.permissions()
	if err != nil {
		return err
	}
	for _, r := range roles {
		r.Namespace = ""
		if err := b.addObject(r.Name+"_rbac.authorization.k8s.io_v1_role.yaml", r); err != nil {
			return err
		}
	}
	for _, r := range clusterRoles {
		if err := b.addObject(r.Name+"_rbac.authorization.k8s.io_v1_clusterrole.yaml", r); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bundle) addObject(name string, obj any) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	data, err := marshal(m)
	if err != nil {
		return err
	}
	b.Files["manifests/"+name] = data
	return nil
}

// stampCreatedAt keeps the previous createdAt when no file of the bundle changed (the CSV compared
// without its createdAt), so that make verify can compare a fresh generation with the committed bundle.
func (b *Bundle) stampCreatedAt(opts Options) error {
	b.CSV.Annotations[createdAtKey] = ""
	fresh, err := marshalCSV(b.CSV)
	if err != nil {
		return err
	}
	stamp := opts.Now().UTC().Format(createdFormat)
	if prevStamp, same := b.sameAsPrevious(opts.Previous, fresh); same {
		stamp = prevStamp
	}
	b.CSV.Annotations[createdAtKey] = stamp
	b.Files[csvFile], err = marshalCSV(b.CSV)
	return err
}

// sameAsPrevious reports whether the previous bundle in dir has exactly these files with these
// contents, its CSV differing at most in createdAt, and returns that createdAt.
func (b *Bundle) sameAsPrevious(dir string, freshCSV []byte) (string, bool) {
	if dir == "" {
		return "", false
	}
	old, err := os.ReadFile(filepath.Join(dir, csvFile))
	if err != nil {
		return "", false
	}
	stamp, sameCSV := sameButCreatedAt(old, freshCSV)
	if !sameCSV {
		return "", false
	}
	expected := filetree.Files{csvFile: old}
	for name, data := range b.Files {
		if name != csvFile {
			expected[name] = data
		}
	}
	return stamp, expected.Same(dir) == nil
}

// sameButCreatedAt compares two CSV files with createdAt blanked and returns the old stamp.
func sameButCreatedAt(old, fresh []byte) (string, bool) {
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(old, &csv); err != nil || csv.Annotations == nil {
		return "", false
	}
	stamp := csv.Annotations[createdAtKey]
	csv.Annotations[createdAtKey] = ""
	blank, err := marshalCSV(&csv)
	return stamp, err == nil && bytes.Equal(blank, fresh)
}

func marshalCSV(csv *operatorsv1alpha1.ClusterServiceVersion) ([]byte, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	return marshal(m)
}

// marshal writes YAML without the empty creationTimestamp fields typed objects carry.
func marshal(m map[string]any) ([]byte, error) {
	dropNullTimestamps(m)
	return yaml.Marshal(m)
}

func dropNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, x := range t {
			dropNullTimestamps(x)
		}
	case []any:
		for _, x := range t {
			dropNullTimestamps(x)
		}
	}
}

// Annotations are the bundle's metadata, also the LABELs of its image.
func Annotations(rec *release.Record) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         rec.Package,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(rec.Latest().Channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": rec.DefaultChannel,
		"operators.operatorframework.io.test.mediatype.v1":         "scorecard+v1",
		"operators.operatorframework.io.test.config.v1":            "tests/scorecard/",
	}
}

func annotationsYAML(rec *release.Record) []byte {
	data, _ := yaml.Marshal(map[string]any{"annotations": Annotations(rec)})
	return data
}
