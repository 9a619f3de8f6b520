// Package cluster runs a real Kubernetes cluster on one machine without
// Docker, as test infrastructure (make cluster, e2e/cluster_test.go): etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy
// built from their Go modules (.tools/bin), and one node whose agent
// (package nodeagent, on the virtual-kubelet node library) runs each Pod's
// containers as local processes in a network namespace per Pod, on a Linux
// bridge, and enforces NetworkPolicies' Ingress rules with iptables.
//
// The cluster is one per machine: its bridge, Pod and Service ranges and
// kube-proxy's iptables chains are the host's. A lock file keeps a second
// one from starting; Down removes everything Up created. docs/cluster.md
// describes it.
package cluster
