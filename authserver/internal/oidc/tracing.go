package oidc

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/portcullis/portcullis/serverkit"
)

// Spans around the calls to the provider, each the parent of the HTTP
// client span of its request. Their attributes never hold codes, tokens
// or secrets, and their error status is a fixed text: the token
// endpoint's error may echo what it was sent.
const (
	spanCodeExchange = "oidc.code_exchange"
	spanRefresh      = "oidc.refresh"
	spanJWKSFetch    = "oidc.jwks_fetch"
)

const tracerScope = "github.com/portcullis/portcullis/authserver/internal/oidc"

// Option configures New.
type Option func(*options)

type options struct {
	tracing trace.TracerProvider
}

// WithTracerProvider records the calls to the provider as spans of tp,
// children of the check's span: oidc.code_exchange, oidc.refresh and
// oidc.jwks_fetch, each with the HTTP client span of its request (the
// discovery request has only the latter). Nil (the default) records
// nothing and leaves the HTTP client as it is.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracing = tp }
}

// traceClient wraps client's transport in a client span per request,
// carrying the trace to the provider (traceparent and B3 headers). The
// span holds method, URL and status: the provider's URLs carry no
// secret, and request headers and bodies are not recorded.
func traceClient(client *http.Client, tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	client.Transport = otelhttp.NewTransport(client.Transport,
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(serverkit.Propagator()),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))
}
