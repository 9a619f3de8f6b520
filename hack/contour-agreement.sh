#!/usr/bin/env bash
# make contour-agreement: run the HTTPProxy cases of Contour v1.33's own DAG
# tests (internal/dag/status_test.go, builder_test.go) through Contour's
# builder and through portcullis translate, and print how often the two agree
# (valid or not; the reasons of the Valid condition's errors and warnings) and
# every disagreement. See hack/contourbaseline/agreement/main.go.
#   AGREEMENT_FLAGS='-run TestDAGStatus'   only some of the cases
#   AGREEMENT_FLAGS='-keep'                keep the temporary copy of Contour
#   AGREEMENT_FLAGS='-cases DIR'           record the cases in DIR; a later run with it
#                                          compares them again without Contour's tests
# Not part of make test or CI: it downloads Contour's module and its
# dependencies (the first run) and compiles Contour's internal/dag tests.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$ROOT" && go build -o "$bin/portcullis" ./controlplane/cmd/portcullis)
cd "$ROOT/hack/contourbaseline"
export GOWORK=off
dir=$(go mod download -json github.com/projectcontour/contour | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
go build -o "$bin/agreement" ./agreement
# shellcheck disable=SC2086
"$bin/agreement" -contour "$dir" -portcullis "$bin/portcullis" ${AGREEMENT_FLAGS:-}
