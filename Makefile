# Portcullis — the front door.
#   make demo    run the standalone stack and show it working
#   make test    install the tools the tests need, then run every test
#   make bench   print the benchmark tables (see docs/benchmarks.md)
#   make image   the container images as tarballs in bin/images/, no Docker daemon needed
#   make cluster a real Kubernetes cluster on this machine, no Docker (docs/cluster.md)
#   make conformance  the Gateway API conformance suite against the chart in that cluster (REPORT=FILE)
SHELL := /bin/bash
ROOT := $(abspath .)
TOOLS := $(ROOT)/.tools
BIN := $(ROOT)/bin
MODULES := apis serverkit controlplane authserver extprocserver extension e2e
export KUBEBUILDER_ASSETS := $(TOOLS)/bin
export PORTCULLIS_TOOLS := $(TOOLS)
GOTEST_FLAGS ?=
# --version of the binaries: the release tag (or commit) and the commit.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -X github.com/portcullis/portcullis/serverkit/version.Version=$(VERSION) -X github.com/portcullis/portcullis/serverkit/version.Commit=$(COMMIT) -X main.version=$(VERSION)

.PHONY: all help tools generate build image cluster cluster-down conformance soak test test-unit test-e2e bench contour-agreement demo lint vet fmt clean

all: build

## help: list the targets
help:
	@awk -F': ' '/^## /{sub(/^## /,""); split($$0,a,": "); printf "  make %-10s %s\n", a[1], substr($$0, length(a[1])+3)}' $(MAKEFILE_LIST)

## tools: install Envoy, kube-apiserver, etcd, controller-gen, protoc-gen-go(-grpc), oidc-provider, helm, Keycloak, Dex, golangci-lint (.tools/) and Chromium (15-20 min the first time)
tools:
	@hack/install-tools.sh all

## generate: regenerate deepcopy code and CRD manifests, copy the Gateway API CRDs into the chart, generate the extension contract's Go code (committed)
generate:
	@hack/install-tools.sh controller-gen protoc-gen
	@hack/generate.sh
	@hack/gateway-api-crds.sh
	@hack/generate-extension.sh

## build: build the binaries into bin/
build:
	@mkdir -p $(BIN)
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/portcullis ./controlplane/cmd/portcullis
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/authserver ./authserver/cmd/authserver
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/extprocserver ./extprocserver/cmd/extprocserver
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/echoserver ./e2e/cmd/echoserver
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/checkload ./e2e/cmd/checkload
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/basicauth-extension ./extension/cmd/basicauth-extension

# make image: the tag defaults to the chart's appVersion, so the chart's
# default image names are what make image writes.
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/portcullis/Chart.yaml)
IMAGES ?= $(BIN)/images

## image: the container images (ghcr.io/portcullis/portcullis with its three servers, basicauth-extension) as tarballs in bin/images/, without a Docker daemon
image:
	@mkdir -p $(IMAGES)/bin
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGES)/bin/ ./controlplane/cmd/portcullis ./authserver/cmd/authserver ./extprocserver/cmd/extprocserver ./extension/cmd/basicauth-extension
	go run ./e2e/cmd/image -bin $(IMAGES)/bin -out $(IMAGES) -tag $(IMAGE_TAG)

CLUSTER_BIN := $(BIN)/cluster
CLUSTER_STATE ?= /tmp/portcullis-cluster

## cluster: a one-machine Kubernetes cluster (real control plane, Pods as local processes; root, no Docker) for tests; prints its kubeconfig (docs/cluster.md)
cluster: image
	@hack/install-tools.sh kube envoy cluster
	@mkdir -p $(CLUSTER_BIN)
	go build -o $(CLUSTER_BIN)/ ./e2e/cmd/cluster ./e2e/cmd/echoserver sigs.k8s.io/gateway-api/conformance/echo-basic
	$(CLUSTER_BIN)/cluster up --state $(CLUSTER_STATE) --tools $(TOOLS)/bin --images $(IMAGES) --bin $(CLUSTER_BIN)

## cluster-down: remove the cluster and everything it created (processes, network namespaces, links, iptables rules, data)
cluster-down:
	@if [ -x $(CLUSTER_BIN)/cluster ]; then $(CLUSTER_BIN)/cluster down --state $(CLUSTER_STATE) --tools $(TOOLS)/bin; \
	else go run ./e2e/cmd/cluster down --state $(CLUSTER_STATE) --tools $(TOOLS)/bin; fi

## lint: golangci-lint in every module (.golangci.yml; installed by make tools)
lint:
	@hack/install-tools.sh golangci-lint
	@hack/lint.sh

## vet: go vet every module
vet:
	@for m in $(MODULES); do (cd $$m && go vet ./...) || exit 1; done

## conformance: the official Gateway API conformance suite against the Helm chart in the one-machine cluster (root; REPORT=FILE writes its report; docs/gateway-api.md)
conformance:
	@hack/install-tools.sh kube envoy helm cluster
	cd e2e && CONFORMANCE_REPORT="$(REPORT)" CONFORMANCE_WD="$(CURDIR)" \
		go test -tags conformance -count=1 -timeout 80m -v -run 'TestConformance$$' ./conformance

## soak: the whole stack at saturation for SOAK (default 10m): no failed request, goroutines, open files and RSS flat (docs/production-faults.md)
SOAK ?= 10m
soak:
	@hack/install-tools.sh kube envoy
	cd e2e && PORTCULLIS_SOAK_DURATION=$(SOAK) go test -tags soak -count=1 -timeout 60m -v -run 'TestSoak$$' .

## test: everything (unit, golden, envtest, e2e) — the README's test command
test: tools vet
	@hack/run-tests.sh $(GOTEST_FLAGS)

## test-unit: only the tests that need no external component
test-unit:
	@for m in $(filter-out e2e,$(MODULES)); do (cd $$m && go test $(GOTEST_FLAGS) ./...) || exit 1; done

## test-e2e: only the end-to-end tests (real Envoy, API server, servers)
test-e2e: tools
	cd e2e && go test -count=1 -timeout 30m $(GOTEST_FLAGS) ./...

## bench: benchmarks against the real components, with baselines measured in the same run (BENCH=<area> for one)
bench: tools
	@hack/bench.sh

## contour-agreement: HTTPProxy verdicts and reasons against Contour v1.33's own DAG test cases (downloads Contour; not in test or CI)
contour-agreement:
	@hack/contour-agreement.sh

## demo: the standalone stack on examples/quickstart and examples/gateway-api/basic (DEMO_ONESHOT=1 to exit after the printout)
demo:
	@hack/install-tools.sh envoy
	@hack/demo.sh

## fmt: gofmt every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## clean: remove bin/
clean:
	rm -rf $(BIN)
