// Command extprocserver is an Envoy external processing (ext_proc v3 gRPC)
// server running a chain of built-in processors; run "extprocserver --help".
package main

import (
	"github.com/portcullis/portcullis/extprocserver/internal/cli"
	"github.com/portcullis/portcullis/serverkit/command"
)

func main() {
	command.Main(cli.NewRootCommand())
}
