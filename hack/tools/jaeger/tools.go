//go:build tools

// Package tools pins github.com/jaegertracing/jaeger so that `go build
// github.com/jaegertracing/jaeger/cmd/all-in-one` works from this module:
// e2e/tracing_test.go runs the real Jaeger all-in-one (OTLP in, the query
// API out, in-memory storage). Jaeger's go.mod has a replace directive, so
// `go install ...@v1.76.0` refuses it; this module repeats the replace.
// Nothing here is imported elsewhere.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/all-in-one"
