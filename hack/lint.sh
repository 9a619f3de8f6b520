#!/usr/bin/env bash
# make lint: golangci-lint (.golangci.yml) in every module of the workspace.
# The linter is installed by hack/install-tools.sh golangci-lint at the
# pinned version; each module is linted on its own (golangci-lint works per
# module), and every module is linted even when one fails. hack/contourbaseline
# (make bench's Contour baseline, a module outside the workspace) is not
# linted here: linting it needs Contour's dependencies, which CI never
# downloads; lint it by hand with GOWORK=off when it changes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINT="$ROOT/.tools/bin/golangci-lint"
[ -x "$LINT" ] || { echo "golangci-lint not installed: run make tools" >&2; exit 1; }
status=0
for m in apis serverkit controlplane authserver extprocserver extension e2e; do
	echo "==> golangci-lint in $m"
	(cd "$ROOT/$m" && "$LINT" run -c "$ROOT/.golangci.yml" ./...) || status=1
done
exit $status
