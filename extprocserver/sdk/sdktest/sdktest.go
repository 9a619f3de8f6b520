// Package sdktest runs a Processor behind the real stream driver on an
// in-process gRPC connection, with a client that plays Envoy's part, so
// processors can be unit-tested message by message.
package sdktest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Serve serves p (with opts; logs are discarded unless opts set a logger)
// until the test ends and returns a client. The gRPC server has
// sdk.ServerOptions(), as extprocserver's.
func Serve(t testing.TB, p sdk.Processor, opts ...sdk.Option) extprocv3.ExternalProcessorClient {
	t.Helper()
	return ServeGRPC(t, sdk.ServerOptions(), p, opts...)
}

// ServeGRPC is Serve on a gRPC server with grpcOpts instead (nil: gRPC's
// defaults, among them the standard protobuf codec).
func ServeGRPC(t testing.TB, grpcOpts []grpc.ServerOption, p sdk.Processor, opts ...sdk.Option) extprocv3.ExternalProcessorClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpcOpts...)
	opts = append([]sdk.Option{sdk.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	extprocv3.RegisterExternalProcessorServer(srv, sdk.NewServer(p, opts...))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return extprocv3.NewExternalProcessorClient(conn)
}

// Stream is one ext_proc stream, i.e. one HTTP exchange.
type Stream struct {
	t testing.TB
	extprocv3.ExternalProcessor_ProcessClient
}

// Open starts a stream on c, cancelled when the test ends.
func Open(t testing.TB, c extprocv3.ExternalProcessorClient) *Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := c.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &Stream{t: t, ExternalProcessor_ProcessClient: s}
}

// RoundTrip sends req and returns its answer.
func (s *Stream) RoundTrip(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	s.t.Helper()
	if err := s.Send(req); err != nil {
		s.t.Fatalf("Send: %v", err)
	}
	resp, err := s.Recv()
	if err != nil {
		s.t.Fatalf("Recv: %v", err)
	}
	return resp
}

// HeaderMap builds a HeaderMap from name, value pairs (values in
// raw_value, as Envoy sends them).
func HeaderMap(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

// RequestHeaders and the functions below build the messages Envoy sends.
func RequestHeaders(eos bool, kv ...string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: HeaderMap(kv...), EndOfStream: eos}}}
}

func ResponseHeaders(eos bool, kv ...string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: HeaderMap(kv...), EndOfStream: eos}}}
}

func RequestBody(b string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

func ResponseBody(b string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

func RequestTrailers(kv ...string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{Trailers: HeaderMap(kv...)}}}
}

func ResponseTrailers(kv ...string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocv3.HttpTrailers{Trailers: HeaderMap(kv...)}}}
}

// WithModes adds the protocol_config Envoy puts on a stream's first message.
func WithModes(r *extprocv3.ProcessingRequest, req, resp sdk.BodyMode) *extprocv3.ProcessingRequest {
	r.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: req, ResponseBodyMode: resp}
	return r
}

// Common returns the CommonResponse of a headers or body answer.
func Common(r *extprocv3.ProcessingResponse) *extprocv3.CommonResponse {
	switch v := r.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		return v.RequestHeaders.GetResponse()
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		return v.ResponseHeaders.GetResponse()
	case *extprocv3.ProcessingResponse_RequestBody:
		return v.RequestBody.GetResponse()
	case *extprocv3.ProcessingResponse_ResponseBody:
		return v.ResponseBody.GetResponse()
	}
	return nil
}

// Mutation renders the header mutation of any answer compactly: "-name"
// for a removal, "=name:v" for an overwrite, "+name:v" for an append.
func Mutation(r *extprocv3.ProcessingResponse) string {
	var m *extprocv3.HeaderMutation
	switch v := r.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_RequestTrailers:
		m = v.RequestTrailers.GetHeaderMutation()
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		m = v.ResponseTrailers.GetHeaderMutation()
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		m = v.ImmediateResponse.GetHeaders()
	default:
		m = Common(r).GetHeaderMutation()
	}
	return MutationString(m)
}

// MutationString is Mutation for a HeaderMutation.
func MutationString(m *extprocv3.HeaderMutation) string {
	var out string
	add := func(s string) {
		if out != "" {
			out += " "
		}
		out += s
	}
	for _, r := range m.GetRemoveHeaders() {
		add("-" + r)
	}
	for _, s := range m.GetSetHeaders() {
		op := "+"
		if s.GetAppendAction() == corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
			op = "="
		}
		add(op + s.GetHeader().GetKey() + ":" + string(s.GetHeader().GetRawValue()))
	}
	return out
}
