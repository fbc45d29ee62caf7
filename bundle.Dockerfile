# The etcd-operator OLM bundle image. Build from the repository root:
#   docker build -f bundle.Dockerfile -t quay.io/quorumkit/etcd-operator-bundle:v<version> .
# The LABELs repeat bundle/metadata/annotations.yaml and the COPYs match what
# operator/internal/olm/images.BuildBundleImage builds; images.CheckDockerfiles fails when they drift.
FROM scratch

LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=etcd-operator
LABEL operators.operatorframework.io.bundle.channels.v1=stable,candidate
LABEL operators.operatorframework.io.bundle.channel.default.v1=stable
LABEL operators.operatorframework.io.test.mediatype.v1=scorecard+v1
LABEL operators.operatorframework.io.test.config.v1=tests/scorecard/

COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
COPY bundle/tests/scorecard /tests/scorecard/
