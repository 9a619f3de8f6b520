// Command cluster runs the one-machine Kubernetes cluster of package
// cluster (make cluster, make cluster-down; docs/cluster.md).
//
//	cluster up   [--state DIR] [--tools DIR] [--images DIR] [--bin DIR]
//	cluster down [--state DIR] [--tools DIR]
//
// and, run by the cluster itself:
//
//	cluster node --config FILE     the node agent
//	cluster container-init FILE    a container's process, before exec
//	cluster pause                  stands in for images that only have to run
//	cluster dns -conf FILE         stands in for coredns (dns.go)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/portcullis/portcullis/e2e/cluster"
	"github.com/portcullis/portcullis/e2e/nodeagent"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "node":
		err = node(os.Args[2:])
	case "container-init":
		if len(os.Args) != 3 {
			usage()
		}
		err = nodeagent.ContainerInit(os.Args[2])
	case "dns":
		err = dnsServer(os.Args[2:])
	case "pause":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		<-ctx.Done()
		stop()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster up|down [flags]")
	os.Exit(2)
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	stateDir := fs.String("state", cluster.DefaultStateDir, "state folder (data, certificates, logs, kubeconfig)")
	tools := fs.String("tools", ".tools/bin", "folder of etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy and envoy")
	imagesDir := fs.String("images", "bin/images", "folder of the image tarballs of make image")
	binDir := fs.String("bin", "bin/cluster", "folder of echo-basic and echoserver")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the cluster")
	_ = fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := cluster.Config{StateDir: abs(*stateDir), ToolsBin: abs(*tools), Self: self,
		Images: cluster.DefaultImages(abs(*imagesDir), abs(*binDir), abs(*tools), self)}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	kubeconfig, err := cluster.Up(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster ready in %.1fs\n", time.Since(start).Seconds())
	fmt.Println(kubeconfig)
	return nil
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	stateDir := fs.String("state", cluster.DefaultStateDir, "state folder")
	tools := fs.String("tools", ".tools/bin", "folder of kube-proxy (for its --cleanup)")
	_ = fs.Parse(args)
	return cluster.Down(cluster.Config{StateDir: abs(*stateDir), ToolsBin: abs(*tools)})
}

func node(args []string) error {
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	config := fs.String("config", "", "node configuration written by cluster up")
	lockFD := fs.Int("lock-fd", -1, "file descriptor holding the cluster's lock (kept open)")
	_ = fs.Parse(args)
	cfg, err := cluster.ReadNodeConfig(*config)
	if err != nil {
		return err
	}
	if *lockFD >= 0 {
		// Keep it referenced: the lock lives as long as this process.
		defer os.NewFile(uintptr(*lockFD), "lock").Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return nodeagent.Run(ctx, cfg)
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
