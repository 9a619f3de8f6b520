// Command authserver is an Envoy external authorization (ext_authz v3 gRPC)
// server with several backends; run "authserver --help".
package main

import (
	"github.com/portcullis/portcullis/authserver/internal/cli"
	"github.com/portcullis/portcullis/serverkit/command"
)

func main() {
	command.Main(cli.NewRootCommand())
}
