//go:build tools

// Package tools pins k8s.io/kubernetes so that `go build
// k8s.io/kubernetes/cmd/kube-apiserver` works from this module. The tests run
// this real API server (through envtest); nothing here is imported elsewhere.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
