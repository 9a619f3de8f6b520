#!/usr/bin/env bash
# Regenerates the code and manifests derived from the API types in apis/:
#
#   apis/{projectcontour,gateway}/*/zz_generated.deepcopy.go  (controller-gen object)
#   apis/crds/<group>_<plural>.yaml                           (controller-gen crd)
#
# Both are committed; apis/generate_test.go fails when they are stale.
#
# Environment:
#   CONTROLLER_GEN  controller-gen binary (default .tools/bin/controller-gen,
#                   installed by `hack/install-tools.sh controller-gen`)
#   CRD_OUT         directory for the CRD YAML (default apis/crds); may also
#                   be given as the first argument
#   OBJECT_OUT      when set, the deepcopy files are written to
#                   $OBJECT_OUT/<package dir>/zz_generated.deepcopy.go instead
#                   of next to the types (used by the staleness test)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONTROLLER_GEN=${CONTROLLER_GEN:-$ROOT/.tools/bin/controller-gen}
CRD_OUT=${1:-${CRD_OUT:-$ROOT/apis/crds}}
OBJECT_OUT=${OBJECT_OUT:-}
HEADER=$ROOT/hack/boilerplate.go.txt

if [ ! -x "$CONTROLLER_GEN" ]; then
	echo "controller-gen not found at $CONTROLLER_GEN: run \`make tools\` (or hack/install-tools.sh controller-gen)" >&2
	exit 1
fi

mkdir -p "$CRD_OUT"
CRD_OUT=$(cd "$CRD_OUT" && pwd)

cd "$ROOT/apis"
# The apis module is self-contained: load it without the workspace so that
# work in progress in other modules cannot break generation.
export GOWORK=off

# The API groups: projectcontour.io (projectcontour/) and
# gateway.portcullis.dev (gateway/). Every API package has a
# groupversion_info.go.
groups=(projectcontour gateway)
mapfile -t pkgs < <(find "${groups[@]}" -name groupversion_info.go -exec dirname {} \; | sort)

for pkg in "${pkgs[@]}"; do
	out=()
	if [ -n "$OBJECT_OUT" ]; then
		mkdir -p "$OBJECT_OUT/$pkg"
		out=("output:object:dir=$OBJECT_OUT/$pkg")
	fi
	"$CONTROLLER_GEN" object:headerFile="$HEADER" paths="./$pkg" "${out[@]}"
done

# Start from an empty set so a removed kind does not leave a stale manifest.
rm -f "$CRD_OUT"/projectcontour.io_*.yaml "$CRD_OUT"/gateway.portcullis.dev_*.yaml
"$CONTROLLER_GEN" crd paths="./projectcontour/...;./gateway/..." output:crd:artifacts:config="$CRD_OUT"
# The chart ships the same CRDs in its crds/ (copies, not a link: Helm warns
# on every render of a chart with a symbolic link);
# e2e/harness's TestChartCRDsAreTheAPIs fails when they differ.
if [ "$CRD_OUT" = "$ROOT/apis/crds" ]; then
	rm -rf "$ROOT/charts/portcullis/crds"
	mkdir -p "$ROOT/charts/portcullis/crds"
	install -m 0644 "$CRD_OUT"/*.yaml "$ROOT/charts/portcullis/crds/"
fi
