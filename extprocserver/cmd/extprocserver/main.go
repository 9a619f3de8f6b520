// Command extprocserver is an Envoy external processing (ext_proc v3 gRPC)
// server running a chain of built-in processors; run "extprocserver --help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/portcullis/portcullis/extprocserver/internal/cli"
)

func main() {
	// SIGTERM (Kubernetes) and SIGINT start a graceful shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := cli.NewRootCommand()
	cmd.SetContext(ctx)
	code := cli.Execute(cmd)
	stop()
	os.Exit(code)
}
