package serverkittest

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Spans records the spans of a test in memory: pass Provider in
// serverkit.Options.TracerProvider (or to a backend).
type Spans struct {
	Provider *sdktrace.TracerProvider
	exp      *tracetest.InMemoryExporter
}

// NewSpans returns a provider that exports every span as it ends.
func NewSpans(t testing.TB) *Spans {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	// Not Shutdown: the in-memory exporter forgets its spans on shutdown,
	// and a failing test wants them in its messages.
	t.Cleanup(func() { _ = tp.ForceFlush(context.Background()) })
	return &Spans{Provider: tp, exp: exp}
}

// All is every span ended so far.
func (s *Spans) All() tracetest.SpanStubs { return s.exp.GetSpans() }

// Wait returns the first ended span named name, waiting up to 10 s: a
// server span ends after the client has its answer.
func (s *Spans) Wait(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	return s.WaitIn(t, trace.TraceID{}, name)
}

// WaitIn is Wait for a span of trace tid (any trace when tid is zero).
func (s *Spans) WaitIn(t testing.TB, tid trace.TraceID, name string) tracetest.SpanStub {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for _, sp := range s.exp.GetSpans() {
			if sp.Name == name && (!tid.IsValid() || sp.SpanContext.TraceID() == tid) {
				return sp
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q in trace %s among %v", name, tid, Names(s.exp.GetSpans()))
		}
	}
}

// In is every ended span of trace tid.
func (s *Spans) In(tid trace.TraceID) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range s.exp.GetSpans() {
		if sp.SpanContext.TraceID() == tid {
			out = append(out, sp)
		}
	}
	return out
}

// Attr is the value of attribute key of sp, and whether it is set.
func Attr(sp tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// Names lists the names of spans, for failure messages.
func Names(spans tracetest.SpanStubs) []string {
	names := make([]string, len(spans))
	for i, sp := range spans {
		names[i] = sp.Name
	}
	return names
}

// RemoteParent returns ctx with a traceparent header in its outgoing gRPC
// metadata, as Envoy sends it, and the sampled span context it names.
func RemoteParent(ctx context.Context) (context.Context, trace.SpanContext) {
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:]) // crypto/rand never fails on supported platforms
	_, _ = rand.Read(sid[:])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return metadata.AppendToOutgoingContext(ctx, "traceparent", fmt.Sprintf("00-%s-%s-01", tid, sid)), sc
}

// OTLPCollector is an OTLP trace receiver on loopback, over gRPC and
// HTTP: what a collector receives from a server run with
// OTEL_EXPORTER_OTLP_ENDPOINT.
type OTLPCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	// Endpoint and HTTPEndpoint are the OTEL_EXPORTER_OTLP_ENDPOINT values
	// that reach it with OTEL_EXPORTER_OTLP_PROTOCOL grpc and
	// http/protobuf.
	Endpoint, HTTPEndpoint string

	mu    sync.Mutex
	spans []ExportedSpan
}

// ExportedSpan is a span as the collector received it.
type ExportedSpan struct {
	Service string // the resource's service.name
	Span    *tracepb.Span
}

// StartOTLPCollector serves a collector until the test ends.
func StartOTLPCollector(t testing.TB) *OTLPCollector {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &OTLPCollector{Endpoint: "http://" + lis.Addr().String()}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, c)
	go func() { _ = s.Serve(lis) }() // ends with Stop
	t.Cleanup(s.Stop)
	h := httptest.NewServer(http.HandlerFunc(c.serveHTTP))
	t.Cleanup(h.Close)
	c.HTTPEndpoint = h.URL
	return c
}

// serveHTTP is OTLP/HTTP with protobuf bodies (POST /v1/traces).
func (c *OTLPCollector) serveHTTP(w http.ResponseWriter, r *http.Request) {
	req := new(coltracepb.ExportTraceServiceRequest)
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	resp, _ := c.Export(r.Context(), req)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out) // the exporter's problem if it left
}

// Export implements the OTLP trace service.
func (c *OTLPCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				c.spans = append(c.spans, ExportedSpan{Service: service, Span: sp})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Spans is every span received so far.
func (c *OTLPCollector) Spans() []ExportedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ExportedSpan(nil), c.spans...)
}
