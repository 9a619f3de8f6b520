package sdk_test

import (
	"context"
	"fmt"
	"net"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/portcullis/portcullis/extprocserver/match"
	"github.com/portcullis/portcullis/extprocserver/processors/deny"
	"github.com/portcullis/portcullis/extprocserver/processors/headers"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// The built-in processors are a Go API too: this program composes two of
// them (deny, headers) with its own processor (tenant, above), as a
// configuration file would, and asks the chain about two requests.
func Example_builtins() {
	noAdmin, err := deny.New(deny.Config{Status: 403, Rules: []match.Rule{{Path: &match.String{Prefix: "/admin"}}}})
	if err != nil {
		panic(err)
	}
	mark, err := headers.New(headers.Config{Request: headers.Ops{Set: map[string]string{"x-processed-by": "example"}}})
	if err != nil {
		panic(err)
	}
	chain := sdk.Chain(noAdmin, mark, tenant{})

	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	extprocsvcv3.RegisterExternalProcessorServer(srv, sdk.NewServer(chain))
	go func() { _ = srv.Serve(lis) }() // returns when stopped
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := extprocsvcv3.NewExternalProcessorClient(conn)

	for _, path := range []string{"/admin/users", "/api"} {
		stream, err := client.Process(context.Background())
		if err != nil {
			panic(err)
		}
		err = stream.Send(&extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{
			RequestHeaders: &extprocsvcv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
				{Key: ":method", RawValue: []byte("GET")}, {Key: ":path", RawValue: []byte(path)},
				{Key: "x-tenant", RawValue: []byte("Blue")},
			}}}}})
		if err != nil {
			panic(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			panic(err)
		}
		if ir := resp.GetImmediateResponse(); ir != nil {
			fmt.Printf("%s: answered %d\n", path, ir.GetStatus().GetCode())
			continue
		}
		var set []string
		for _, h := range resp.GetRequestHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
			set = append(set, fmt.Sprintf("%s=%s", h.GetHeader().GetKey(), h.GetHeader().GetRawValue()))
		}
		sort.Strings(set)
		fmt.Printf("%s: continues with %v\n", path, set)
	}
	// Output:
	// /admin/users: answered 403
	// /api: continues with [x-processed-by=example x-tenant-route=blue]
}
