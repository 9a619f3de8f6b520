package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.opentelemetry.io/otel"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/extprocserver/internal/config"
	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestTracing opens real ext_proc streams carrying Envoy's traceparent
// and expects, in that trace, the Process span and beneath it a span per
// processor and message, named after the processor, with its phase; the
// processor that answers the client says so.
func TestTracing(t *testing.T) {
	f, err := config.Parse([]byte(`processors:
- name: no-admin
  deny: {rules: [{path: {prefix: /admin}}]}
- headers: {request: {set: {x-stamp: "1"}}, response: {set: {x-resp: "1"}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	spans := serverkittest.NewSpans(t)
	srv := serve(t, f, func(o *serverkit.Options) { o.TracerProvider = spans.Provider })
	client := extprocsvcv3.NewExternalProcessorClient(srv.Conn)

	for _, tc := range []struct {
		name     string
		messages []*extprocsvcv3.ProcessingRequest
		want     []string // processor/phase/immediate of each span, in order
	}{
		{"request and response headers", []*extprocsvcv3.ProcessingRequest{
			sdktest.RequestHeaders(true, ":method", "GET", ":path", "/a"),
			sdktest.ResponseHeaders(true, ":status", "200"),
		}, []string{
			"no-admin/request_headers/false", "headers#1/request_headers/false",
			"no-admin/response_headers/false", "headers#1/response_headers/false",
		}},
		{"denied: the chain stops at the processor that answers", []*extprocsvcv3.ProcessingRequest{
			sdktest.RequestHeaders(true, ":method", "GET", ":path", "/admin/x"),
		}, []string{"no-admin/request_headers/true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx, parent := serverkittest.RemoteParent(ctx)
			stream, err := client.Process(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.messages {
				if err := stream.Send(m); err != nil {
					t.Fatal(err)
				}
				if _, err := stream.Recv(); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("end of stream: %v", err)
			}

			process := spans.WaitIn(t, parent.TraceID(), "envoy.service.ext_proc.v3.ExternalProcessor/Process")
			if process.Parent.SpanID() != parent.SpanID() {
				t.Errorf("Process span's parent %s, want Envoy's span %s", process.Parent.SpanID(), parent.SpanID())
			}
			var got []string
			for _, sp := range spans.In(parent.TraceID()) {
				if sp.Name == process.Name {
					continue
				}
				name, _ := serverkittest.Attr(sp, sdk.AttrProcessor)
				phase, _ := serverkittest.Attr(sp, sdk.AttrPhase)
				immediate, _ := serverkittest.Attr(sp, sdk.AttrImmediate)
				if sp.Name != "processor "+name.AsString() {
					t.Errorf("span %q for processor %q", sp.Name, name.AsString())
				}
				if sp.Parent.SpanID() != process.SpanContext.SpanID() {
					t.Errorf("%s's parent %s, want the Process span %s", sp.Name, sp.Parent.SpanID(), process.SpanContext.SpanID())
				}
				got = append(got, fmt.Sprintf("%s/%s/%t", name.AsString(), phase.AsString(), immediate.AsBool()))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("processor spans %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("processor span %d: %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestNoTracingNoWrapping: without a provider the chain is the
// processors themselves (no per-message cost).
func TestNoTracingNoWrapping(t *testing.T) {
	f, err := config.Parse([]byte("processors:\n- headers: {request: {set: {x-a: \"1\"}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := f.Build(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := sdk.Traced("x", plain, nil); p != plain {
		t.Errorf("Traced with no provider wrapped the processor")
	}
	spans := serverkittest.NewSpans(t)
	traced, err := f.Build(nil, spans.Provider)
	if err != nil {
		t.Fatal(err)
	}
	if traced == plain {
		t.Errorf("Build with a provider did not wrap the processor")
	}
}

// TestCommandTracesToOTLP runs "extprocserver serve" as a Deployment
// with OTEL_EXPORTER_OTLP_ENDPOINT does: a stream carrying Envoy's
// traceparent reaches the collector, after SIGTERM, in Envoy's trace,
// from service portcullis-extprocserver.
func TestCommandTracesToOTLP(t *testing.T) {
	col := serverkittest.StartOTLPCollector(t)
	for _, k := range []string{"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Cleanup(func() { otel.SetTracerProvider(tracenoop.NewTracerProvider()) }) // the command set the global one
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(conf, []byte("processors:\n- name: stamp\n  headers: {request: {set: {x-stamp: \"1\"}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"serve", "--config", conf, "--address", addr, "--metrics-address", ""})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	sctx, parent := serverkittest.RemoteParent(ctx)
	client := extprocsvcv3.NewExternalProcessorClient(serverkittest.Dial(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials())))
	stream, err := client.Process(sctx, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(sdktest.RequestHeaders(true, ":path", "/")); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v", err)
	}
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}

	tid := parent.TraceID()
	var names []string
	for _, s := range col.Spans() {
		if s.Service != "portcullis-extprocserver" || !bytes.Equal(s.Span.GetTraceId(), tid[:]) {
			t.Errorf("span %s of service %q in trace %x, want portcullis-extprocserver in %s", s.Span.GetName(), s.Service, s.Span.GetTraceId(), tid)
		}
		names = append(names, s.Span.GetName())
	}
	slices.Sort(names)
	if want := []string{"envoy.service.ext_proc.v3.ExternalProcessor/Process", "processor stamp"}; !slices.Equal(names, want) {
		t.Errorf("collector received %v, want %v", names, want)
	}
}
