#!/usr/bin/env bash
# kind-e2e.sh: the cluster chart test and the Gateway API conformance suite
# on a kind cluster, for a Linux machine with a Docker engine (not run on
# CI, whose machines have none: there the one-machine cluster runs them).
#
#   hack/kind-e2e.sh            # TestClusterChart, then make conformance
#   KEEP=1 hack/kind-e2e.sh     # leave the kind cluster running
#
# It builds make image's images and the e2e echo backend's, loads them into
# a kind cluster (kind load image-archive), routes the cluster's Service and
# Pod ranges from this machine through the kind node (the tests reach
# ClusterIPs, as the suite reaches each Gateway's), and runs the tests with
# PORTCULLIS_E2E_KUBECONFIG naming the cluster. Needs docker, kind, and
# root for `ip route`. The Envoy and conformance backend images are pulled
# by the node from their registries.
set -euo pipefail

cd "$(dirname "$0")/.."
name=${KIND_CLUSTER:-portcullis-e2e}
for tool in docker kind ip; do
	command -v "$tool" >/dev/null || { echo "kind-e2e.sh: $tool not found" >&2; exit 1; }
done
tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/portcullis/Chart.yaml)

make image
mkdir -p bin/kind
CGO_ENABLED=0 go build -o bin/kind/echoserver ./e2e/cmd/echoserver
go run ./e2e/cmd/image -out bin/kind -tag test -echoserver bin/kind/echoserver

kubeconfig=$PWD/bin/kind/kubeconfig
if ! kind get clusters | grep -qx "$name"; then
	kind create cluster --name "$name" --kubeconfig "$kubeconfig" --wait 2m
else
	kind get kubeconfig --name "$name" >"$kubeconfig"
fi
for tarball in bin/images/portcullis.tar bin/images/basicauth-extension.tar bin/kind/echoserver.tar; do
	kind load image-archive "$tarball" --name "$name"
done

# The node's address on the Docker network, and the cluster's ranges.
node=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name-control-plane")
services=$(docker exec "$name-control-plane" sh -c "grep -o 'service-cluster-ip-range=[^ ]*' /etc/kubernetes/manifests/kube-apiserver.yaml | cut -d= -f2")
pods=$(docker exec "$name-control-plane" sh -c "grep -o 'cluster-cidr=[^ ]*' /etc/kubernetes/manifests/kube-controller-manager.yaml | cut -d= -f2")
routes=("$services" "$pods")
cleanup() {
	for r in "${routes[@]}"; do ip route del "$r" via "$node" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] || kind delete cluster --name "$name"
}
trap cleanup EXIT
for r in "${routes[@]}"; do ip route replace "$r" via "$node"; done

export PORTCULLIS_E2E_KUBECONFIG=$kubeconfig
(cd e2e && go test -count=1 -timeout 20m -v -run 'TestClusterChart$' .)
make conformance REPORT="${REPORT:-bin/kind/conformance-report.yaml}"
echo "kind-e2e.sh: passed ($tag)"
