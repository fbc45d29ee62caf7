# The etcd-operator file-based catalog image. Build from the repository root:
#   docker build -f catalog.Dockerfile -t quay.io/quorumkit/etcd-operator-catalog:v<version> .
# The opm tag is go.mod's operator-registry version: the cache built by the RUN below is only served by
# the same version. operator/internal/olm/images.BuildCatalogImage builds the same layout without Docker;
# images.CheckDockerfiles fails when the two drift.
FROM quay.io/operator-framework/opm:v1.65.0

ENTRYPOINT ["/bin/opm"]
# --cache-enforce-integrity: exit instead of rebuilding a cache that does not match /configs.
CMD ["serve", "/configs", "--cache-dir=/tmp/cache", "--cache-enforce-integrity"]

ADD catalog /configs
# Pre-build the serve cache so the catalog Pod starts without building it.
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

LABEL operators.operatorframework.io.index.configs.v1=/configs
