// Package cli is the extprocserver command line.
package cli

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/extprocserver/internal/config"
	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/command"
)

const rootLong = `extprocserver is an Envoy external processing server. It implements the
ext_proc v3 gRPC API (envoy.service.ext_proc.v3.ExternalProcessor/Process):
Envoy streams the headers, bodies and trailers of each HTTP request and
response to it, and it answers each message with changes (headers, body,
route cache, dynamic metadata) or an immediate response.

It runs a chain of built-in processors described in a YAML file; see
"extprocserver serve --help" and docs/extprocserver.md. Write your own
processors in Go with the package
github.com/portcullis/portcullis/extprocserver/sdk.`

const serveLong = `serve runs the processors of --config on every ext_proc stream, in order.

Built-in processors (one per entry of "processors:"):
  headers        set/append/remove request and response headers; values are
                 templates: ${path} ${method} ${authority} ${scheme}
                 ${request_id} ${status} ${elapsed_ms} ${elapsed_us}
                 ${start_unix_ms} ${request_header.NAME} ${response_header.NAME}
  deny           immediate response (403 by default) for requests matching
                 path / method / header rules
  jsonRedact     mask JSON fields by path ($.a.b, $.list[*].x, $..token) in
                 request and/or response bodies; needs body mode BUFFERED
  ndjsonRedact   the same, line by line in newline-delimited JSON bodies;
                 streams with body mode FULL_DUPLEX_STREAMED (or BUFFERED)
  sizeLimit      413 when the request body is larger than maxRequestBytes
  routeByHeader  decide a variant (rules, sticky percentage split), set it in
                 a request header and clear the route cache so Envoy re-routes
  observe        upstream time and body sizes as response headers and metrics

What Envoy sends is set in its ext_proc filter (processing_mode). A
processor never sees a phase Envoy skips: jsonRedact needs
request_body_mode / response_body_mode BUFFERED, sizeLimit needs a request
body mode for chunked requests, headers-only processors need none.

Server flags: the gRPC address, TLS (and mutual TLS with --tls-ca-path, which
is how Envoy should connect), a separate plain-HTTP port serving /metrics and
/healthz, logging. gRPC health and reflection are served on the gRPC port.

Metrics, on --metrics-address:
  portcullis_extprocserver_messages_total{phase,outcome}
      ext_proc messages by phase and outcome: continue, immediate, error
  portcullis_extprocserver_message_seconds{phase}
      time spent in the processors per message
  portcullis_extprocserver_upstream_seconds{code_class},
  portcullis_extprocserver_body_bytes{direction}    (observe processor)
  grpc_server_handled_total, grpc_server_handling_seconds

Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set, streams continue Envoy's
trace (W3C traceparent or B3) and are exported over OTLP with a span
"processor <name>" per processor and message; OTEL_SERVICE_NAME defaults
to portcullis-extprocserver (docs/tracing-servers.md).`

// NewRootCommand builds the extprocserver command tree.
func NewRootCommand() *cobra.Command {
	root, serving := command.NewRoot("extprocserver",
		"Envoy external processing (ext_proc v3 gRPC) server with built-in processors", rootLong)
	serving.ServiceName = "portcullis-extprocserver" // not portcullis-serve
	root.AddCommand(newServeCommand(serving))
	return root
}

func newServeCommand(serving *command.Serving) *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Serve ext_proc with the processors of a YAML file",
		Long:  serveLong,
		Example: `  # plaintext (h2c) on loopback, metrics on 127.0.0.1:9090
  extprocserver serve --config examples/extprocserver/config.yaml --address 127.0.0.1:9443

  # how Envoy should connect: TLS with client certificates
  extprocserver serve --config config.yaml --address :9443 --metrics-address :9090 \
    --tls-cert-path tls.crt --tls-key-path tls.key --tls-ca-path ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return errors.New("--config is required")
			}
			return serving.Run(cmd, func(_ context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
				f, err := config.Load(configPath)
				if err != nil {
					return nil, err
				}
				srv, err := NewServer(opts, logger, f)
				if err != nil {
					return nil, err
				}
				logger.Info("processors loaded", "config", configPath, "count", len(f.Processors))
				return srv, nil
			})
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "YAML file listing the processors (required)")
	return cmd
}

// NewServer builds the processors of f and wires them into a serverkit
// server with metrics. Tests call it with port 0.
func NewServer(opts serverkit.Options, logger *slog.Logger, f *config.File) (*serverkit.Server, error) {
	if opts.Registry == nil {
		opts.Registry = serverkit.NewRegistry()
	}
	proc, err := f.Build(opts.Registry, opts.TracerProvider)
	if err != nil {
		return nil, err
	}
	messages := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "portcullis_extprocserver_messages_total",
		Help: "ext_proc messages by phase and outcome (continue, immediate, error).",
	}, []string{"phase", "outcome"})
	took := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "portcullis_extprocserver_message_seconds",
		Help:    "Time spent in the processors per ext_proc message.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
	}, []string{"phase"})
	for _, c := range []prometheus.Collector{messages, took} {
		if err := opts.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	driver := sdk.NewServer(proc, sdk.WithLogger(logger), sdk.WithObserver(newObserver(messages, took)))
	opts.GRPCOptions = append(grpcOptions(), opts.GRPCOptions...)
	return serverkit.New(opts, logger, func(s *grpc.Server) {
		extprocsvcv3.RegisterExternalProcessorServer(s, driver)
	})
}

// newObserver records messages and processor time. The series of every
// phase and outcome are looked up once, not on each message.
func newObserver(messages *prometheus.CounterVec, took *prometheus.HistogramVec) sdk.Observer {
	outcomes := []string{sdk.OutcomeContinue, sdk.OutcomeImmediate, sdk.OutcomeError}
	type series struct {
		took     prometheus.Observer
		outcomes []prometheus.Counter
	}
	var byPhase [sdk.ResponseTrailers + 1]series
	for p := sdk.RequestHeaders; p <= sdk.ResponseTrailers; p++ {
		byPhase[p].took = took.WithLabelValues(p.String())
		for _, o := range outcomes {
			byPhase[p].outcomes = append(byPhase[p].outcomes, messages.WithLabelValues(p.String(), o))
		}
	}
	return func(p sdk.Phase, d time.Duration, outcome string) {
		if p < sdk.RequestHeaders || p > sdk.ResponseTrailers {
			messages.WithLabelValues(p.String(), outcome).Inc()
			return
		}
		s := byPhase[p]
		s.took.Observe(d.Seconds())
		if i := slices.Index(outcomes, outcome); i >= 0 {
			s.outcomes[i].Inc()
		} else {
			messages.WithLabelValues(p.String(), outcome).Inc()
		}
	}
}

// grpcOptions tune the gRPC server for Envoy's ext_proc traffic: a
// stream per HTTP request, a few small messages each, over a handful of
// long-lived HTTP/2 connections. Not NumStreamWorkers: handing each stream
// to a waiting worker cost about 7% more CPU per request than a new
// goroutine (bench/extproc), whose stack stays small for this handler.
func grpcOptions() []grpc.ServerOption {
	return append(sdk.ServerOptions(),
		// Fixed flow-control windows turn off gRPC's bandwidth-delay
		// estimation, which otherwise pings Envoy on every burst of data;
		// ext_proc messages are small, the windows are never the limit.
		grpc.InitialWindowSize(1<<20),
		grpc.InitialConnWindowSize(8<<20),
		// One write buffer per connection only while writing: gRPC's
		// default since grpc.SharedWriteBuffer was deprecated.
	)
}
