package bundle

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/desired"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

// csvInputs is everything the CSV is made from besides the rendered manifests.
type csvInputs struct {
	record  *release.Record
	version string
	iconSVG []byte
}

// buildCSV fills the generated fields of the base CSV. createdAt is left empty; Generate sets it.
func buildCSV(p *parts, in csvInputs) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	v, err := semver.Parse(in.version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", in.version, err)
	}
	rec := in.record
	csv := p.base.DeepCopy()
	csv.Name = rec.CSVName(in.version)
	csv.Namespace = "placeholder"
	csv.Spec.Version = version.OperatorVersion{Version: v}
	csv.Spec.Replaces = ""
	if prev, ok := rec.Previous(in.version); ok {
		csv.Spec.Replaces = rec.CSVName(prev.Version)
	}
	operatorImage := rec.OperatorImageRef(in.version)
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations["containerImage"] = operatorImage
	delete(csv.Annotations, "olm.skipRange")
	if r := rec.SkipRange(in.version); r != "" {
		csv.Annotations["olm.skipRange"] = r
	}
	examples, err := almExamples(p.samples)
	if err != nil {
		return nil, err
	}
	csv.Annotations["alm-examples"] = examples
	csv.Spec.Icon = []operatorsv1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(in.iconSVG), MediaType: "image/svg+xml"}}

	perms, clusterPerms, _, _, err := p.permissions()
	if err != nil {
		return nil, err
	}
	var deployments []operatorsv1alpha1.StrategyDeploymentSpec
	for _, d := range p.deployments {
		spec := *d.Spec.DeepCopy()
		forOLM(&spec.Template.Spec, operatorImage)
		deployments = append(deployments, operatorsv1alpha1.StrategyDeploymentSpec{Name: d.Name, Label: d.Labels, Spec: spec})
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{
		StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
		StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{DeploymentSpecs: deployments, Permissions: perms, ClusterPermissions: clusterPerms},
	}
	csv.Spec.RelatedImages = relatedImages(operatorImage)
	if err := checkOwned(csv, p.crds); err != nil {
		return nil, err
	}
	return csv, nil
}

// forOLM points the manager at the release's image and lets it watch the namespaces of its
// OperatorGroup, which OLM passes in the olm.targetNamespaces annotation ("" means all).
func forOLM(pod *corev1.PodSpec, image string) {
	for i := range pod.Containers {
		c := &pod.Containers[i]
		c.Image = image
		for j := range c.Env {
			if c.Env[j].Name == "WATCH_NAMESPACE" {
				c.Env[j] = corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}}
			}
		}
	}
}

// relatedImages lists the operator image and every etcd image the operator is tested with, so that a
// disconnected cluster can mirror all of them.
func relatedImages(operatorImage string) []operatorsv1alpha1.RelatedImage {
	out := []operatorsv1alpha1.RelatedImage{{Name: "etcd-operator", Image: operatorImage}}
	cfg := desired.DefaultConfig()
	for _, v := range etcdv1.KnownVersions {
		out = append(out, operatorsv1alpha1.RelatedImage{Name: "etcd-v" + strings.ReplaceAll(v, ".", "-"), Image: cfg.Image(v)})
	}
	return out
}

// almExamples is the JSON array of samples the console offers as templates.
func almExamples(samples []*unstructured.Unstructured) (string, error) {
	if len(samples) == 0 {
		return "", fmt.Errorf("config/samples renders no EtcdCluster; the CSV needs at least one example")
	}
	var out []map[string]any
	for _, s := range samples {
		c := s.DeepCopy()
		c.SetNamespace("")
		out = append(out, c.Object)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	return string(b), err
}

// checkOwned requires a base CSV entry (display name, descriptors) for every CRD version served.
func checkOwned(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*unstructured.Unstructured) error {
	owned := csv.Spec.CustomResourceDefinitions.Owned
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, raw := range versions {
			ver, _ := raw.(map[string]any)["name"].(string)
			if !slices.ContainsFunc(owned, func(o operatorsv1alpha1.CRDDescription) bool {
				return o.Name == crd.GetName() && o.Version == ver && o.Kind == kind
			}) {
				return fmt.Errorf("the base CSV has no spec.customresourcedefinitions.owned entry for %s %s (kind %s); "+
					"add one with displayName, description and descriptors in config/manifests/bases", crd.GetName(), ver, kind)
			}
		}
	}
	return nil
}
