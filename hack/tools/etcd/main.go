// Command etcd is the real etcd server, built from its Go module so that the
// tests can run a real kube-apiserver without downloading binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
