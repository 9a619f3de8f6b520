// Command authserver is an Envoy external authorization (ext_authz v3 gRPC)
// server with several backends; run "authserver --help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/portcullis/portcullis/authserver/internal/cli"
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
