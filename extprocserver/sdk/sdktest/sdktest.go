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
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Serve serves p (with opts; logs are discarded unless opts set a logger)
// until the test ends and returns a client. The gRPC server has
// sdk.ServerOptions(), as extprocserver's.
func Serve(t testing.TB, p sdk.Processor, opts ...sdk.Option) extprocsvcv3.ExternalProcessorClient {
	t.Helper()
	return ServeGRPC(t, sdk.ServerOptions(), p, opts...)
}

// ServeGRPC is Serve on a gRPC server with grpcOpts instead (nil: gRPC's
// defaults, among them the standard protobuf codec).
func ServeGRPC(t testing.TB, grpcOpts []grpc.ServerOption, p sdk.Processor, opts ...sdk.Option) extprocsvcv3.ExternalProcessorClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpcOpts...)
	opts = append([]sdk.Option{sdk.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	extprocsvcv3.RegisterExternalProcessorServer(srv, sdk.NewServer(p, opts...))
	go func() { _ = srv.Serve(lis) }() // returns when t's cleanup stops it
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // the test is over: nothing to report to
	return extprocsvcv3.NewExternalProcessorClient(conn)
}

// Stream is one ext_proc stream, i.e. one HTTP exchange.
type Stream struct {
	t testing.TB
	extprocsvcv3.ExternalProcessor_ProcessClient
}

// Open starts a stream on c, cancelled when the test ends.
func Open(t testing.TB, c extprocsvcv3.ExternalProcessorClient) *Stream {
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
func (s *Stream) RoundTrip(req *extprocsvcv3.ProcessingRequest) *extprocsvcv3.ProcessingResponse {
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

// RequestHeaders and the functions below build the messages Envoy sends:
// RequestHeaders the request headers, with the pairs kv and end_of_stream
// eos.
func RequestHeaders(eos bool, kv ...string) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocsvcv3.HttpHeaders{Headers: HeaderMap(kv...), EndOfStream: eos}}}
}

// ResponseHeaders is the response headers message, as RequestHeaders.
func ResponseHeaders(eos bool, kv ...string) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocsvcv3.HttpHeaders{Headers: HeaderMap(kv...), EndOfStream: eos}}}
}

// RequestBody is a request body chunk, the last when eos.
func RequestBody(b string, eos bool) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestBody{RequestBody: &extprocsvcv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

// ResponseBody is a response body chunk, the last when eos.
func ResponseBody(b string, eos bool) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocsvcv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

// RequestTrailers is the request trailers message, with the pairs kv.
func RequestTrailers(kv ...string) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocsvcv3.HttpTrailers{Trailers: HeaderMap(kv...)}}}
}

// ResponseTrailers is the response trailers message, with the pairs kv.
func ResponseTrailers(kv ...string) *extprocsvcv3.ProcessingRequest {
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocsvcv3.HttpTrailers{Trailers: HeaderMap(kv...)}}}
}

// WithModes adds the protocol_config Envoy puts on a stream's first message.
func WithModes(r *extprocsvcv3.ProcessingRequest, req, resp sdk.BodyMode) *extprocsvcv3.ProcessingRequest {
	r.ProtocolConfig = &extprocsvcv3.ProtocolConfiguration{RequestBodyMode: req, ResponseBodyMode: resp}
	return r
}

// Common returns the CommonResponse of a headers or body answer.
func Common(r *extprocsvcv3.ProcessingResponse) *extprocsvcv3.CommonResponse {
	switch v := r.GetResponse().(type) {
	case *extprocsvcv3.ProcessingResponse_RequestHeaders:
		return v.RequestHeaders.GetResponse()
	case *extprocsvcv3.ProcessingResponse_ResponseHeaders:
		return v.ResponseHeaders.GetResponse()
	case *extprocsvcv3.ProcessingResponse_RequestBody:
		return v.RequestBody.GetResponse()
	case *extprocsvcv3.ProcessingResponse_ResponseBody:
		return v.ResponseBody.GetResponse()
	}
	return nil
}

// Mutation renders the header mutation of any answer compactly: "-name"
// for a removal, "=name:v" for an overwrite, "+name:v" for an append.
func Mutation(r *extprocsvcv3.ProcessingResponse) string {
	var m *extprocsvcv3.HeaderMutation
	switch v := r.GetResponse().(type) {
	case *extprocsvcv3.ProcessingResponse_RequestTrailers:
		m = v.RequestTrailers.GetHeaderMutation()
	case *extprocsvcv3.ProcessingResponse_ResponseTrailers:
		m = v.ResponseTrailers.GetHeaderMutation()
	case *extprocsvcv3.ProcessingResponse_ImmediateResponse:
		m = v.ImmediateResponse.GetHeaders()
	default:
		m = Common(r).GetHeaderMutation()
	}
	return MutationString(m)
}

// MutationString is Mutation for a HeaderMutation.
func MutationString(m *extprocsvcv3.HeaderMutation) string {
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
