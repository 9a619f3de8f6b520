//go:build tools

// Package tools pins github.com/dexidp/dex so that `go build
// github.com/dexidp/dex/cmd/dex` works from this module: the OIDC tests run
// the real Dex (e2e/dex_test.go). cmd/dex is a main package, so it cannot be
// wrapped like hack/tools/etcd; nothing here is imported elsewhere.
//
// Dex tags its releases v2.x.y on a module path without /v2, so the Go
// module proxy serves them only as pseudo-versions of the release commits:
// v0.0.0-20260303133905-11d2eeb52b42 is the tag v2.45.1. Dex's own
// `replace github.com/dexidp/dex/api/v2 => ./api/v2` does not apply here;
// the released api/v2 v2.4.0 it requires is used instead (at v2.45.1 that
// directory differs from api/v2.4.0 only in its go.mod).
package tools

import _ "github.com/dexidp/dex/cmd/dex"
