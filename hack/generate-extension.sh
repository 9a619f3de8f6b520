#!/usr/bin/env bash
# Regenerates the Go code of the extension server contract:
#
#   extension/proto/**/*.proto  ->  extension/api/<version>/*.pb.go
#
# with extension/hack/protogen: protocompile (pure Go, no protoc) compiles
# the .proto files, resolving their Envoy, xDS and well-known imports from
# the descriptors the go-control-plane Go packages embed, and protoc-gen-go
# and protoc-gen-go-grpc generate the code. The result is committed;
# extension/hack/protogen's TestGeneratedCodeIsCurrent fails when it is
# stale. Run by `make generate`.
#
# Environment:
#   PROTOC_PLUGINS  directory holding protoc-gen-go and protoc-gen-go-grpc
#                   (default .tools/bin, installed by
#                   `hack/install-tools.sh protoc-gen`)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLUGINS=${PROTOC_PLUGINS:-$ROOT/.tools/bin}

for p in protoc-gen-go protoc-gen-go-grpc; do
	if [ ! -x "$PLUGINS/$p" ]; then
		echo "$p not found in $PLUGINS: run \`make tools\` (or hack/install-tools.sh protoc-gen)" >&2
		exit 1
	fi
done

cd "$ROOT/extension"
# The extension module is self-contained: generate from its own go.mod, so
# the Envoy descriptors are those of the versions it pins.
GOWORK=off go run ./hack/protogen -proto proto -out . -plugins "$PLUGINS"
