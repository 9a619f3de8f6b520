package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// startGRPCEchoProcess runs the echoserver binary in its gRPC mode and
// returns its address once it accepts connections.
func startGRPCEchoProcess(t *testing.T, name string) string {
	t.Helper()
	bin := harness.BuildBinary(t, "github.com/portcullis/portcullis/e2e/cmd/echoserver")
	addr := harness.FreeAddr(t)
	harness.StartProcess(t, "echoserver-"+name, bin, "--grpc", "--name", name, "--address", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, addr); err != nil {
		t.Fatalf("gRPC echoserver %s: %v", name, err)
	}
	return addr
}

// grpcRoutes are the GRPCRoutes of TestGatewayAPI: on grpc.example.com,
// TestService/UnaryCall goes to grpc-b with the header x-backend: b and to
// grpc-a (with a header added) otherwise; the health service goes to grpc-a;
// nothing else is routed.
func grpcRoutes() []client.Object {
	method := func(service, method string) *gwapiv1.GRPCMethodMatch {
		m := &gwapiv1.GRPCMethodMatch{Type: ptr.To(gwapiv1.GRPCMethodMatchExact), Service: ptr.To(service)}
		if method != "" {
			m.Method = ptr.To(method)
		}
		return m
	}
	to := func(service string) []gwapiv1.GRPCBackendRef {
		return []gwapiv1.GRPCBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: backendObject("", service)}}}
	}
	return []client.Object{&gwapiv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "grpc"},
		Spec: gwapiv1.GRPCRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("gw", "http")}},
			Hostnames:       hostnames("grpc.example.com"),
			Rules: []gwapiv1.GRPCRouteRule{
				{
					Matches: []gwapiv1.GRPCRouteMatch{{Method: method("grpc.testing.TestService", "UnaryCall"),
						Headers: []gwapiv1.GRPCHeaderMatch{{Name: "x-backend", Value: "b"}}}},
					BackendRefs: to("grpc-b"),
				},
				{
					Matches: []gwapiv1.GRPCRouteMatch{{Method: method("grpc.testing.TestService", "UnaryCall")}},
					Filters: []gwapiv1.GRPCRouteFilter{{Type: gwapiv1.GRPCRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gwapiv1.HTTPHeaderFilter{Add: headers("x-route", "grpc-a")}}},
					BackendRefs: to("grpc-a"),
				},
				{
					Matches:     []gwapiv1.GRPCRouteMatch{{Method: method("grpc.health.v1.Health", "")}},
					BackendRefs: to("grpc-a"),
				},
			},
		},
	}}
}

// runGRPCRouteScenario calls the GRPCRoutes' backends through Envoy's
// listener at addr with grpc-go, over h2c.
func runGRPCRouteScenario(t *testing.T, addr string, grpcA *harness.GRPCEcho) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("grpc.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tc := testgrpc.NewTestServiceClient(conn)

	// unary calls UnaryCall with the metadata kv, returning the answer and
	// the response headers.
	unary := func(kv ...string) (*testgrpc.SimpleResponse, metadata.MD, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
		var hdr metadata.MD
		resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.Header(&hdr))
		return resp, hdr, err
	}
	var resp *testgrpc.SimpleResponse
	var hdr metadata.MD
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if resp, hdr, err = unary(); err != nil {
			return err
		}
		if resp.ServerId != "grpc-a" {
			return fmt.Errorf("UnaryCall answered by %q, want grpc-a", resp.ServerId)
		}
		return nil
	})
	if resp.Hostname != "grpc.example.com" {
		t.Errorf("grpc-a saw :authority %q, want grpc.example.com", resp.Hostname)
	}
	if got := hdr.Get(harness.GRPCEchoHeaderPrefix + "x-route"); len(got) != 1 || got[0] != "grpc-a" {
		t.Errorf("grpc-a saw x-route %q, want grpc-a (the rule's RequestHeaderModifier)", got)
	}

	resp, hdr, err = unary("x-backend", "b")
	if err != nil {
		t.Fatalf("UnaryCall with x-backend: b: %v", err)
	}
	if resp.ServerId != "grpc-b" {
		t.Errorf("UnaryCall with x-backend: b answered by %q, want grpc-b", resp.ServerId)
	}
	if got := hdr.Get(harness.GRPCEchoHeaderPrefix + "x-route"); len(got) != 0 {
		t.Errorf("grpc-b saw x-route %q: the other rule's filter", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "grpc.testing.TestService"})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health check through Envoy: %v (%v), want SERVING", h, err)
	}

	// EmptyCall matches no rule: Envoy answers (404, which a gRPC client
	// reads as Unimplemented), not the backend, which implements it.
	before := grpcA.Calls.Load()
	_, err = tc.EmptyCall(ctx, &testgrpc.Empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("EmptyCall, matched by no rule: %v, want Unimplemented", err)
	}
	if n := grpcA.Calls.Load() - before; n != 0 {
		t.Errorf("grpc-a answered %d calls of an unrouted method", n)
	}
}
