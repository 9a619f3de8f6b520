package serverkit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestTracingContinuesTheCallersTrace sends each header format Envoy's
// tracers use on a real call and expects the server span in that trace,
// child of the caller's span, with the handler running inside it.
func TestTracingContinuesTheCallersTrace(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tc := range []struct {
		name string
		md   []string
	}{
		{"W3C traceparent (OpenTelemetry tracer)", []string{"traceparent", "00-" + tid + "-" + sid + "-01"}},
		{"B3 multi-header (Zipkin tracer)", []string{"x-b3-traceid", tid, "x-b3-spanid", sid, "x-b3-sampled", "1"}},
		{"B3 single header", []string{"b3", tid + "-" + sid + "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := serverkittest.NewSpans(t)
			r := start(t, func(o *serverkit.Options) { o.TracerProvider = spans.Provider })
			ctx := metadata.AppendToOutgoingContext(ctxT(t), tc.md...)
			if err := call(ctx, r.dial(t, nil), "Ok"); err != nil {
				t.Fatal(err)
			}
			sp := spans.Wait(t, testService+"/Ok")
			if got := sp.SpanContext.TraceID().String(); got != tid {
				t.Errorf("trace ID %s, want the caller's %s", got, tid)
			}
			if got := sp.Parent.SpanID().String(); got != sid || !sp.Parent.IsRemote() {
				t.Errorf("parent %s (remote %v), want the caller's span %s", got, sp.Parent.IsRemote(), sid)
			}
			if sp.SpanKind != trace.SpanKindServer {
				t.Errorf("kind %v, want server", sp.SpanKind)
			}
			if seen, _ := r.impl.seen.Load().(trace.SpanContext); seen.SpanID() != sp.SpanContext.SpanID() {
				t.Errorf("handler ran in span %s, want the server span %s", seen.SpanID(), sp.SpanContext.SpanID())
			}
		})
	}
}

// TestTracingSkipsHealthChecks: probes would drown the traces that matter.
func TestTracingSkipsHealthChecks(t *testing.T) {
	spans := serverkittest.NewSpans(t)
	r := start(t, func(o *serverkit.Options) { o.TracerProvider = spans.Provider })
	conn := r.dial(t, nil)
	ctx, _ := serverkittest.RemoteParent(ctxT(t))
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, conn, "Ok"); err != nil {
		t.Fatal(err)
	}
	spans.Wait(t, testService+"/Ok") // the health span, if any, ended before
	for _, sp := range spans.All() {
		if strings.Contains(sp.Name, "Health") {
			t.Errorf("health check traced: %s", sp.Name)
		}
	}
}

// TestNoTracerProviderNoTracing: without a provider the server installs
// no instrumentation, so a caller's trace context does not even reach the
// handler.
func TestNoTracerProviderNoTracing(t *testing.T) {
	r := start(t, nil)
	ctx, _ := serverkittest.RemoteParent(ctxT(t))
	if err := call(ctx, r.dial(t, nil), "Ok"); err != nil {
		t.Fatal(err)
	}
	if seen, _ := r.impl.seen.Load().(trace.SpanContext); seen.IsValid() {
		t.Errorf("handler saw span context %v without a tracer provider", seen)
	}
}

func TestTracingEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, true},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_SDK_DISABLED": "true"}, false},
		{"only a service name", map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if got := serverkit.TracingEnabled(); got != tc.want {
				t.Errorf("TracingEnabled() = %v, want %v", got, tc.want)
			}
			tp, err := serverkit.NewTracerProviderFromEnv(context.Background(), "portcullis-test")
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != tc.want {
				t.Errorf("provider %v, want one: %v", tp, tc.want)
			}
			if tp != nil {
				_ = tp.Shutdown(context.Background()) // never exported to
			}
		})
	}
}

func TestTracingRefusesUnknownProtocol(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err := serverkit.NewTracerProviderFromEnv(context.Background(), "portcullis-test")
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("err = %v, want one naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
}

// TestTracingExportsOverOTLP exports to a real OTLP receiver, over gRPC
// and over HTTP, with the default service name and with
// OTEL_SERVICE_NAME.
func TestTracingExportsOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		name, protocol, serviceEnv, wantService string
	}{
		{"grpc default name", "", "", "portcullis-test"},
		{"grpc OTEL_SERVICE_NAME", "grpc", "edge-auth", "edge-auth"},
		{"http/protobuf", "http/protobuf", "", "portcullis-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			col := serverkittest.StartOTLPCollector(t)
			endpoint := col.Endpoint
			if tc.protocol == "http/protobuf" {
				endpoint = col.HTTPEndpoint
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			if tc.protocol != "" {
				t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			}
			if tc.serviceEnv != "" {
				t.Setenv("OTEL_SERVICE_NAME", tc.serviceEnv)
			}
			tp, err := serverkit.NewTracerProviderFromEnv(context.Background(), "portcullis-test")
			if err != nil {
				t.Fatal(err)
			}
			_, sp := serverkit.Tracer(tp, "test").Start(context.Background(), "work")
			sp.End()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(ctx); err != nil { // the flush at exit
				t.Fatal(err)
			}
			got := col.Spans()
			if len(got) != 1 || got[0].Span.GetName() != "work" || got[0].Service != tc.wantService {
				t.Fatalf("collector received %+v, want one span \"work\" of service %q", got, tc.wantService)
			}
		})
	}
}

// clearOTELEnv unsets, for this test, the variables the developer's shell
// may have set.
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "") // restores the old value afterwards
	}
}
