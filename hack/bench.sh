#!/usr/bin/env bash
# make bench: every benchmark, each printing a table with its baseline measured
# in the same run. Benchmarks live in e2e/bench/<area>/ as Go benchmarks that
# start the real components (Envoy, API server, our servers) and run each case
# once with e2e/loadgen; b.N is ignored, hence -benchtime 1x.
#   BENCH=authserver make bench    only e2e/bench/authserver
#   BENCH=contour make bench       only the pipeline against Contour v1.33
#                                  (controlplane/internal/pipeline, BenchmarkAgainstContour)
#   BENCH_FLAGS='-v' make bench    extra go test flags
# These machines are shared and noisy: read medians and ratios, not absolutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT/e2e"
export PORTCULLIS_TOOLS="$ROOT/.tools" KUBEBUILDER_ASSETS="$ROOT/.tools/bin"

# The comparison with Contour's own builder needs the pipeline's internals,
# so it is a benchmark of the controlplane module, not an e2e/bench area.
contour=
[[ -z "${BENCH:-}" || "${BENCH}" == contour ]] && contour=1
pkgs=()
for d in bench/*/; do
	d=${d%/}
	[[ -n "${BENCH:-}" && "$(basename "$d")" != "$BENCH" ]] && continue
	ls "$d"/*_test.go >/dev/null 2>&1 && pkgs+=("./$d")
done
if [[ ${#pkgs[@]} -eq 0 && -z "$contour" ]]; then
	echo "no benchmark matches BENCH=${BENCH:-} under e2e/bench/" >&2
	exit 1
fi
# egctl, the baseline of BenchmarkTranslateVsEgctl (e2e/bench/controlplane),
# is built here and not by make tools: only the benchmarks need it. Kept in
# .tools/bin by version, so only the first run pays for the build.
if [[ -z "${BENCH:-}" || "$BENCH" == controlplane ]]; then
	"$ROOT/hack/install-tools.sh" egctl
fi
echo "machine: $(nproc) cores, $(uname -r), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n "$contour" ]]; then
	# shellcheck disable=SC2086
	(cd "$ROOT/controlplane" && go test -count 1 -run '^$' -bench '^BenchmarkAgainstContour$' -benchtime 1x -timeout 60m ${BENCH_FLAGS:-} ./internal/pipeline)
fi
if [[ ${#pkgs[@]} -gt 0 ]]; then
	# -p 1: one benchmark package at a time, so they don't measure each other.
	# shellcheck disable=SC2086
	go test -p 1 -count 1 -run '^$' -bench . -benchtime 1x -timeout 60m ${BENCH_FLAGS:-} "${pkgs[@]}"
fi
