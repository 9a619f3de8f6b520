#!/usr/bin/env bash
# make test: every module's tests — unit, golden, generated-files, envtest and
# end-to-end (real Envoy, kube-apiserver + etcd, our servers on loopback).
# The tools must be installed first (make tools; make test does it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PORTCULLIS_TOOLS="$ROOT/.tools" KUBEBUILDER_ASSETS="$ROOT/.tools/bin"

status=0
for m in apis serverkit controlplane authserver extprocserver extension e2e; do
	echo "==> go test ./... in $m"
	# e2e runs real processes one test at a time: about 15 minutes on 2
	# idle cores, over 20 on busy ones.
	timeout=30m
	[ "$m" = e2e ] && timeout=50m
	(cd "$m" && go test -count=1 -timeout "$timeout" "$@" ./...) || status=1
done
exit $status
