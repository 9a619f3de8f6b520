#!/usr/bin/env bash
# Copies the Gateway API's standard-channel CRDs, at the version of
# sigs.k8s.io/gateway-api in controlplane/go.mod, from the Go module cache
# into charts/portcullis/gateway-api-crds/ (committed: the chart installs
# them, and the test API servers of the e2e and controlplane tests install
# them from there). Run by `make generate`; e2e/harness's
# TestGatewayAPICRDsMatchTheModule fails when they are stale.
#
# The standard channel's ValidatingAdmissionPolicy
# (gateway.networking.k8s.io_vap_safeupgrades.yaml, which refuses
# experimental or older CRDs over these) is not a CRD and is not copied:
# it belongs to whoever manages the cluster's Gateway API installation.
#
# Usage: hack/gateway-api-crds.sh [output directory]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/charts/portcullis/gateway-api-crds}

# The version the control plane is built against, with the workspace's
# replacements and upgrades applied.
read -r version dir < <(cd "$ROOT/controlplane" && go mod download -json sigs.k8s.io/gateway-api |
	python3 -c 'import json, sys; m = json.load(sys.stdin); print(m["Version"], m["Dir"])')
src="$dir/config/crd/standard"
[ -d "$src" ] || { echo "no $src: is sigs.k8s.io/gateway-api $version in the module cache?" >&2; exit 1; }

mkdir -p "$OUT"
# Start from an empty set so a kind dropped upstream does not stay.
rm -f "$OUT"/gateway.networking.k8s.io_*.yaml
for f in "$src"/gateway.networking.k8s.io_*.yaml; do
	case "$(basename "$f")" in
	*_vap_*) continue ;;
	esac
	install -m 0644 "$f" "$OUT/"
done
