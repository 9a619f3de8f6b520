package sdk_test

import (
	"context"
	"net"
	"strings"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// tenant requires an x-tenant header, routes on it and upper-cases request
// bodies (needs request_body_mode BUFFERED).
type tenant struct{ sdk.Continue }

func (tenant) RequestHeaders(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	t := h.Get("x-tenant")
	if t == "" {
		x.Respond(sdk.TextResponse(400, "x-tenant is required"))
		return nil
	}
	h.Set("x-tenant-route", strings.ToLower(t))
	x.ClearRouteCache() // routes match on x-tenant-route
	return x.SetMetadata("example.tenant", "id", t)
}

func (tenant) RequestBody(ctx context.Context, x *sdk.Exchange, b *sdk.Body) error {
	if b.Whole() { // BUFFERED: the driver fixes Content-Length
		b.Replace([]byte(strings.ToUpper(string(b.Bytes()))))
	}
	return nil
}

// The processor of docs/extprocserver.md, served on loopback.
func ExampleNewServer() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer(sdk.ServerOptions()...) // the SDK's codec
	extprocsvcv3.RegisterExternalProcessorServer(s, sdk.NewServer(sdk.Chain(tenant{})))
	go func() { _ = s.Serve(lis) }() // returns when stopped
	s.Stop()
}
