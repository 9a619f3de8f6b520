//go:build tools

// Package tools pins k8s.io/kubernetes so that `go build
// k8s.io/kubernetes/cmd/kube-apiserver` (and kube-controller-manager,
// kube-scheduler, kube-proxy) works from this module. The tests run these real
// components (kube-apiserver through envtest, all of them in the one-machine
// cluster of hack/cluster); nothing here is imported elsewhere.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
