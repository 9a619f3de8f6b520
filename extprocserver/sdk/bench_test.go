package sdk_test

import (
	"context"
	"testing"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

type headersOnly struct{ sdk.Continue }

func (headersOnly) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	h.Set("x-route", x.Method()+" "+x.Path())
	return nil
}

func (headersOnly) ResponseHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	h.Set("x-request-id", x.RequestID())
	return nil
}

// BenchmarkHeadersExchange is one headers-only exchange (a stream with
// request and response headers) through the driver over in-process gRPC:
// the server-side cost Envoy's ext_proc filter adds per HTTP request.
func BenchmarkHeadersExchange(b *testing.B) {
	c := sdktest.Serve(b, headersOnly{})
	req := sdktest.RequestHeaders(true, ":method", "GET", ":path", "/api/login", ":authority", "bench.example",
		"user-agent", "Go-http-client/1.1", "x-request-id", "0f0e0d0c-0b0a-0908-0706-050403020100", "x-forwarded-proto", "http")
	resp := sdktest.ResponseHeaders(true, ":status", "200", "content-type", "application/json", "content-length", "512")
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := c.Process(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Send(req); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		if err := s.Send(resp); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		if err := s.CloseSend(); err != nil {
			b.Fatal(err)
		}
		_, _ = s.Recv() // io.EOF: the server ends the stream
		cancel()
	}
}
