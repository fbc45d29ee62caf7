# etcd-operator. `make help` lists the targets. Every tool is built from a pinned module under
# operator/tools/ into bin/ (cached: a tool is rebuilt only when its pins change).

VERSION ?= 0.1.0
IMG ?= quay.io/quorumkit/etcd-operator:v$(VERSION)
# Fuzz budgets are execution counts, not durations: Go 1.26's fuzz coordinator
# can fail a clean run with "context deadline exceeded" when a duration runs
# out while a worker is mid-call (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 300000x
FUZZLONG ?= 20000000x
GO ?= go
# operator-registry pulls in containers/image; this tag keeps it pure Go (no gpgme C library).
TAGS := containers_image_openpgp
OLM = $(GO) run -tags $(TAGS) ./operator/cmd/olm

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize
GOLANGCI_LINT := $(BIN)/golangci-lint
OPM := $(BIN)/opm
PROBE := $(BIN)/grpc_health_probe
KUBE_VERSION_FLAGS := -X k8s.io/component-base/version.gitVersion=v1.35.4 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35
BUILD_TOOL := scripts/build-tool.sh

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object paths=./operator/api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC in config/ from the Go types and markers.
	$(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./operator/internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: build
build: generate ## Build the operator binary into bin/etcd-operator.
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -trimpath -ldflags "-s -w" -o $(BIN)/etcd-operator ./operator/cmd/etcd-operator

.PHONY: run
run: manifests generate ## Run the operator against the cluster in $KUBECONFIG (install the CRD first: make install).
	$(GO) run ./operator/cmd/etcd-operator

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRD into the cluster in $KUBECONFIG (needs kubectl).
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: render
render: manifests $(KUSTOMIZE) ## Render the full operator install (CRD, RBAC, Deployment) to stdout.
	@$(KUSTOMIZE) build config/default

##@ Tests

.PHONY: test
# The end-to-end suite runs last and alone: its scenarios measure healing, and sharing two cores with
# other test packages would only make those figures noisy.
test: envtest-tools cluster-tools $(OPM) $(PROBE) ## Unit, real etcd, real kube-apiserver and local-cluster tests, a short fuzz of the planner, then the end-to-end suite (root).
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags $(TAGS) $$($(GO) list -tags $(TAGS) ./operator/... | grep -v /operator/internal/e2e$$) -count=1 -timeout 20m
	$(GO) test ./operator/internal/plan -run '^$$' -fuzz FuzzNext -fuzztime $(FUZZTIME)
	$(MAKE) --no-print-directory e2e

.PHONY: e2e
e2e: cluster-tools ## End-to-end suite: the operator as a Pod on the local cluster, faults under a checked client load (root).
	$(GO) test -tags $(TAGS) ./operator/internal/e2e/ -count=1 -timeout 25m -v -run '$(or $(RUN),.)'

.PHONY: bench
bench: cluster-tools ## Benchmark table: the operator on the local cluster against the static-bootstrap floor (root; about 5 minutes).
	$(GO) run -tags $(TAGS) ./operator/cmd/bench $(BENCHFLAGS)

.PHONY: fuzz
fuzz: ## Fuzz the planner's safety invariants for longer (FUZZLONG executions, about 15 minutes).
	$(GO) test ./operator/internal/plan -run '^$$' -fuzz FuzzNext -fuzztime $(FUZZLONG)

.PHONY: bench-scale
bench-scale: ## Time the embedded-etcd scale sequence 1->3->5->3 (5 runs).
	$(GO) test ./operator/internal/etcdclient -run '^$$' -bench ScaleSequence -benchtime 1x -count 5

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run --allow-parallel-runners --config operator/.golangci.yml ./operator/...

.PHONY: verify
verify: generate manifests $(KUSTOMIZE) ## Fail if generated files, formatting or go.mod drift from their sources.
	$(GO) mod tidy
	@test -z "$$(gofmt -l operator)" || { echo "gofmt needed on:"; gofmt -l operator; exit 1; }
	$(GO) vet -tags $(TAGS) ./operator/...
	$(OLM) verify
	$(OLM) dockerfiles
	@$(KUSTOMIZE) build config/default > /dev/null
	@$(KUSTOMIZE) build config/samples > /dev/null
	@git diff --exit-code -- go.mod go.sum operator config bundle catalog || { echo "generated files drifted: commit the output of make generate manifests"; exit 1; }
	@test -z "$$(git status --porcelain -- operator config bundle catalog)" || { echo "untracked generated files:"; git status --porcelain -- operator config bundle catalog; exit 1; }

##@ OLM

.PHONY: bundle
bundle: manifests ## Generate bundle/ (CSV, CRDs, metadata, scorecard) from config/ and config/releases.yaml, and validate it.
	$(OLM) bundle

.PHONY: catalog
catalog: bundle ## Generate and validate the file-based catalog in catalog/ from the release record.
	$(OLM) catalog

.PHONY: images
images: build $(OPM) $(PROBE) ## Build operator, bundle and catalog images as OCI layouts in build/images; REGISTRY=host:port/org pushes them.
	$(OLM) images $(if $(REGISTRY),-registry $(REGISTRY))

.PHONY: operatorhub
operatorhub: ## Write and check the community-operators submission tree in build/operatorhub.
	$(OLM) operatorhub

.PHONY: release
release: ## Cut a release: make release VERSION=x.y.z [CHANNELS=stable,candidate]
	$(OLM) release -version $(VERSION) $(if $(CHANNELS),-channels $(CHANNELS))

##@ Tools

.PHONY: tools
tools: envtest-tools $(CONTROLLER_GEN) $(KUSTOMIZE) $(OPM) $(PROBE) ## Build every pinned tool into bin/.

.PHONY: envtest-tools
envtest-tools: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd for tests (first time: about 7 minutes).
	@$(BUILD_TOOL) kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver -ldflags "$(KUBE_VERSION_FLAGS)"
	@$(BUILD_TOOL) kubernetes k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager -ldflags "$(KUBE_VERSION_FLAGS)"
	@$(BUILD_TOOL) kubernetes k8s.io/kubernetes/cmd/kubectl kubectl -ldflags "$(KUBE_VERSION_FLAGS)"
	@$(BUILD_TOOL) kubernetes k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler -ldflags "$(KUBE_VERSION_FLAGS)"
	@$(BUILD_TOOL) etcd go.etcd.io/etcd/server/v3 etcd

.PHONY: cluster-tools
cluster-tools: envtest-tools build ## Everything the local cluster runs: kube-proxy, CoreDNS, etcd 3.5, podinit, the operator, nftables.
	@scripts/install-packages.sh
	@$(BUILD_TOOL) kubernetes k8s.io/kubernetes/cmd/kube-proxy kube-proxy -ldflags "$(KUBE_VERSION_FLAGS)"
	@$(BUILD_TOOL) coredns github.com/quorumkit/etcd-operator/operator/tools/coredns coredns
	@$(BUILD_TOOL) etcd-v3.5 go.etcd.io/etcd/server/v3 etcd-v3.5.21
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/podinit ./operator/cmd/podinit

.PHONY: olm-tools
olm-tools: ## OLM v0.41.0's olm, catalog and package-server (for issue 5, not yet run by any test; about 2 minutes cold).
	@$(BUILD_TOOL) olm github.com/operator-framework/operator-lifecycle-manager/cmd/olm olm
	@$(BUILD_TOOL) olm github.com/operator-framework/operator-lifecycle-manager/cmd/catalog catalog
	@$(BUILD_TOOL) olm github.com/operator-framework/operator-lifecycle-manager/cmd/package-server package-server

.PHONY: $(CONTROLLER_GEN) $(KUSTOMIZE) $(GOLANGCI_LINT) $(OPM) $(PROBE)
$(CONTROLLER_GEN):
	@$(BUILD_TOOL) controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen controller-gen
$(KUSTOMIZE):
	@$(BUILD_TOOL) kustomize sigs.k8s.io/kustomize/kustomize/v5 kustomize
$(GOLANGCI_LINT):
	@$(BUILD_TOOL) lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint golangci-lint

##@ Demo

.PHONY: demo
demo: cluster-tools ## Local cluster, operator installed as a Pod, a 3-member cluster, a key written and read (root; Ctrl-C stops it).
	$(GO) run -tags $(TAGS) ./operator/cmd/demo

.PHONY: dev-cluster
dev-cluster: cluster-tools ## Only the local cluster with 3 nodes, until Ctrl-C; prints its kubeconfig (root).
	$(GO) run -tags $(TAGS) ./operator/cmd/localcluster
$(OPM): ## opm from the same operator-registry version the catalog cache is built with (first time: about 3 minutes).
	@$(BUILD_TOOL) opm github.com/operator-framework/operator-registry/cmd/opm opm -tags $(TAGS),exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper
$(PROBE):
	CGO_ENABLED=0 $(GO) build -trimpath -o $(PROBE) ./operator/cmd/grpc-health-probe
