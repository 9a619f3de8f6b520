package serverkit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/serverkit/version"
)

// The standard OpenTelemetry variables that turn tracing on and pick the
// exporter's protocol. The exporters and the SDK read the others
// themselves (OTEL_EXPORTER_OTLP_INSECURE, _HEADERS, _TIMEOUT,
// OTEL_TRACES_SAMPLER and _ARG, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES).
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envSDKDisabled        = "OTEL_SDK_DISABLED"
)

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set and OTEL_SDK_DISABLED is not true.
func TracingEnabled() bool {
	if disabled, _ := strconv.ParseBool(os.Getenv(envSDKDisabled)); disabled {
		return false
	}
	return os.Getenv(EnvOTLPEndpoint) != "" || os.Getenv(EnvOTLPTracesEndpoint) != ""
}

// NewTracerProviderFromEnv returns a tracer provider exporting over OTLP
// as the standard OTEL_* variables say (gRPC unless the protocol is
// http/protobuf), or nil when TracingEnabled is false: then nothing is
// exported and the servers skip their instrumentation. service is the
// default service.name (OTEL_SERVICE_NAME wins). Spans go through the
// SDK's batch processor, whose queue is bounded (2048 spans by default,
// OTEL_BSP_MAX_QUEUE_SIZE): when the collector is slow or down, spans are
// dropped, never queued without end. The exporter connects lazily, so a
// missing collector does not hold up start-up. Shut the provider down to
// flush.
func NewTracerProviderFromEnv(ctx context.Context, service string) (*sdktrace.TracerProvider, error) {
	if !TracingEnabled() {
		return nil, nil
	}
	exp, err := newOTLPExporter(ctx)
	if err != nil {
		return nil, err
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", version.Version)),
		resource.WithFromEnv())
	if err != nil {
		_ = exp.Shutdown(ctx) // nothing was exported yet
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER and _ARG, and
	// defaults to parentbased_always_on (Envoy's sampling decision holds).
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func newOTLPExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	protocol, name := os.Getenv(envOTLPTracesProtocol), envOTLPTracesProtocol
	if protocol == "" {
		protocol, name = os.Getenv(envOTLPProtocol), envOTLPProtocol
	}
	switch strings.TrimSpace(protocol) {
	case "", "grpc":
		return otlptracegrpc.New(ctx)
	case "http/protobuf":
		return otlptracehttp.New(ctx)
	}
	return nil, fmt.Errorf("%s=%q: the OTLP trace exporter speaks grpc or http/protobuf", name, protocol)
}

// SetGlobalTracing makes tp and Propagator the process's OpenTelemetry
// globals (for code that uses otel.Tracer, such as SDK processors) and
// sends the SDK's errors (an unreachable collector, dropped spans) to
// logger.
func SetGlobalTracing(tp trace.TracerProvider, logger *slog.Logger) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("tracing", "error", err) }))
}

// Propagator reads and writes both trace header formats Envoy's tracers
// use: W3C trace context (traceparent, the OpenTelemetry tracer) and B3
// (x-b3-* or b3, the Zipkin tracer).
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
		b3.New(b3.WithInjectEncoding(b3.B3MultipleHeader)))
}

// Tracer is tp's tracer for scope, or a no-op one when tp is nil
// (tracing off).
func Tracer(tp trace.TracerProvider, scope string) trace.Tracer {
	if tp == nil {
		return tracenoop.NewTracerProvider().Tracer(scope)
	}
	return tp.Tracer(scope, trace.WithInstrumentationVersion(version.Version))
}

// tracingOption is the gRPC stats handler that continues the caller's
// trace: a server span per call (named service/method, as otelgrpc names
// it), child of the span in the incoming metadata. Health checks and
// reflection are not traced: probes would drown the traces that matter.
// OpenTelemetry metrics are off: the Prometheus ones are the server's.
func tracingOption(tp trace.TracerProvider) grpc.ServerOption {
	return grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(Propagator()),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelgrpc.WithFilter(filters.None(filters.HealthCheck(), filters.ServicePrefix("grpc.reflection."))),
	))
}
