package v1alpha1

// DefaultVersion is the etcd version a cluster gets when spec.version is left out (it must equal the CRD
// default on EtcdClusterSpec.Version; a test checks).
const DefaultVersion = "3.6.7"

// KnownVersions are the etcd versions this operator release is tested with. Their images are listed in
// the OLM bundle's relatedImages so that disconnected clusters can mirror them; any 3.5.x or 3.6.x
// passes validation.
var KnownVersions = []string{"3.5.21", "3.6.7"}
