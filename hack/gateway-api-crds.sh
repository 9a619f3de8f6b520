#!/usr/bin/env bash
# Copies the Gateway API's standard-channel CRDs, at the version of
# sigs.k8s.io/gateway-api in controlplane/go.mod, from the Go module cache
# into charts/portcullis/gateway-api-crds/ (committed: the chart installs
# them, and the test API servers of the e2e and controlplane tests install
# them from there), and the experimental channel's gateway.networking.k8s.io
# CRDs into charts/gateway-api-crds-experimental/crds/ (a chart of their own;
# `make conformance` runs with them).
# The experimental channel's x-k8s.io kinds (XBackend, XMesh, ...) are not
# read by the control plane and not copied. Run by `make generate`;
# e2e/harness's TestGatewayAPICRDsMatchTheModule fails when they are stale.
#
# The standard channel's ValidatingAdmissionPolicy
# (gateway.networking.k8s.io_vap_safeupgrades.yaml, which refuses
# experimental or older CRDs over these) is not a CRD and is not copied:
# it belongs to whoever manages the cluster's Gateway API installation.
#
# Without directories, it also copies the standard CRDs of the kinds the
# control plane reads into controlplane/internal/objects/crdschema/crds,
# which the control plane embeds to check objects read from files (its
# test keeps them equal to the chart's).
#
# Usage: hack/gateway-api-crds.sh [standard directory [experimental directory]]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/charts/portcullis/gateway-api-crds}
OUT_EXPERIMENTAL=${2:-$ROOT/charts/gateway-api-crds-experimental/crds}

# The version the control plane is built against, with the workspace's
# replacements and upgrades applied.
read -r version dir < <(cd "$ROOT/controlplane" && go mod download -json sigs.k8s.io/gateway-api |
	python3 -c 'import json, sys; m = json.load(sys.stdin); print(m["Version"], m["Dir"])')
# copy SRC OUT: the channel's gateway.networking.k8s.io CRDs, from an empty
# set so a kind dropped upstream does not stay.
copy() {
	local src="$dir/config/crd/$1" out=$2 f
	[ -d "$src" ] || { echo "no $src: is sigs.k8s.io/gateway-api $version in the module cache?" >&2; exit 1; }
	mkdir -p "$out"
	rm -f "$out"/gateway.networking.k8s.io_*.yaml
	for f in "$src"/gateway.networking.k8s.io_*.yaml; do
		case "$(basename "$f")" in
		*_vap_*) continue ;;
		esac
		install -m 0644 "$f" "$out/"
	done
}
copy standard "$OUT"
copy experimental "$OUT_EXPERIMENTAL"

if [ -z "${1:-}" ]; then
	CP="$ROOT/controlplane/internal/objects/crdschema/crds"
	mkdir -p "$CP"
	rm -f "$CP"/gateway.networking.k8s.io_*.yaml
	for k in backendtlspolicies gatewayclasses gateways grpcroutes httproutes listenersets referencegrants tcproutes tlsroutes udproutes; do
		install -m 0644 "$OUT/gateway.networking.k8s.io_$k.yaml" "$CP/"
	done
fi
