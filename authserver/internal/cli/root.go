// Package cli holds the authserver command line: a root command with the
// server flags every backend shares, and one subcommand per backend.
package cli

import (
	"log/slog"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/command"
)

const rootLong = `authserver is an Envoy external authorization server. It implements the
ext_authz v3 gRPC API (envoy.service.auth.v3.Authorization/Check): Envoy asks
it about every request on a route where authorization is enabled, and it
answers allow (optionally adding headers for the upstream), deny, or
redirect (to a sign-in page).

In Portcullis you run it behind an ExtensionService and point an HTTPProxy's
authorization (or the global authorization) at that ExtensionService.

Each authentication backend is a subcommand. Each takes --config FILE, a
YAML file with one key, the backend's name, holding its settings
(docs/authserver-<backend>.md); htpasswd also takes flags instead of the
file. All of them share the server flags below: the gRPC address, TLS (and mutual TLS with --tls-ca-path, which
is how Envoy should connect), a separate plain-HTTP port serving /metrics and
/healthz, and logging. gRPC health and server reflection are served on the
gRPC port.

Metrics, on --metrics-address:
  portcullis_authserver_checks_total{backend,result}
      answers by backend and result: allowed, denied, redirect, error
      (error = a 5xx denial: the backend failed and denied the request)
  portcullis_authserver_check_duration_seconds{backend,result}
      time each backend took to answer (histogram)
  grpc_server_handled_total, grpc_server_handling_seconds
      gRPC calls by service, method and code; latency

Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set, checks continue Envoy's
trace (W3C traceparent or B3) and are exported over OTLP with the spans of
the backend (htpasswd.verify, oidc.code_exchange, oidc.refresh,
oidc.jwks_fetch); OTEL_SERVICE_NAME defaults to portcullis-<backend>
(docs/tracing-servers.md).

Security: request headers, credentials, tokens and cookies are never logged;
a failing backend denies (500) instead of returning a gRPC error, so a
fail-open ExtensionService cannot be tricked into allowing.`

// NewRootCommand builds the authserver command tree.
func NewRootCommand() *cobra.Command {
	root, serving := command.NewRoot("authserver",
		"Envoy external authorization (ext_authz v3 gRPC) server with several backends", rootLong)
	for _, b := range backends {
		root.AddCommand(b.command(serving))
	}
	return root
}

// backend is a backend's name and its Authorization implementation.
type backend struct {
	name string
	impl authv3.AuthorizationServer
}

// newServer wires a backend into a serverkit server: fail-closed wrapper,
// metrics, health, reflection. Tests call it with port 0.
func newServer(opts serverkit.Options, logger *slog.Logger, b backend) (*serverkit.Server, error) {
	if opts.Registry == nil {
		opts.Registry = serverkit.NewRegistry()
	}
	metrics, err := check.NewMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	svc := check.Wrap(b.name, b.impl, metrics, logger)
	return serverkit.New(opts, logger, func(s *grpc.Server) {
		authv3.RegisterAuthorizationServer(s, svc)
	})
}
