package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// foreignAuth is an authorization server that is not ours and not careful:
// it allows every request and adds the headers the request's path asks
// for, valid or not. Operators run such servers; Envoy must not pass what
// they produce on unchecked.
type foreignAuth struct {
	authv3.UnimplementedAuthorizationServer
}

// foreignHeaders are the headers foreignAuth adds, by request path.
var foreignHeaders = map[string][2]string{
	"/good":      {"x-foreign", "ok"},
	"/bad-name":  {"x-foreign/key", "v"},       // "/" is not a token character
	"/bad-value": {"x-foreign", "v\r\nx-a: b"}, // a header injection
}

func (foreignAuth) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	h, ok := foreignHeaders[req.GetAttributes().GetRequest().GetHttp().GetPath()]
	if !ok {
		return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.PermissionDenied)},
			HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden}}}}, nil
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)},
		HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: h[0], Value: h[1]}}}}}}, nil
}

// startForeignAuth serves foreignAuth on 127.0.0.1 and returns its port.
func startForeignAuth(t *testing.T) int {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, foreignAuth{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

// An auth server that returns an invalid header name or value gets a clean
// 500 from Envoy (validate_mutations), and nothing reaches the upstream.
// Without the validation the client saw an HTTP/2 PROTOCOL_ERROR and the
// upstream a broken request.
func TestForeignAuthServerInvalidHeaders(t *testing.T) {
	s, c := harness.StartFileStack(t)
	ctx := context.Background()
	cert := s.CA.Issue(t, "foreign.example.com")
	h2c := "h2c"
	objs := []client.Object{cert.Secret("default", "server-tls")}
	objs = append(objs, s.Loopback("default", "echo", 80, c.Echo.Port)...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "foreign-auth", 9443, startForeignAuth(t))...)
	objs = append(objs,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "foreign-auth"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "foreign-auth", Port: 9443}}}},
		authProxy("foreign", "foreign.example.com", "foreign-auth", false),
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := s.HTTPS(s.CA.CertPEM)

	// The control: a valid header reaches the upstream, so the path through
	// the foreign server works and the cases below can fail.
	echo := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://foreign.example.com/good"), http.StatusOK)
	if got := echo.Headers.Get("X-Foreign"); got != "ok" {
		t.Fatalf("upstream saw X-Foreign %q, want ok", got)
	}
	if st, reason, err := s.Validity("default", "foreign"); err != nil || st != string(metav1.ConditionTrue) {
		t.Fatalf("HTTPProxy default/foreign: Valid=%s (%s), %v", st, reason, err)
	}

	for _, path := range []string{"/bad-name", "/bad-value"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			before := c.Echo.Requests()
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			req := harness.MustRequest(t, "https://foreign.example.com"+path).WithContext(ctx)
			resp, err := https.Do(req)
			if err != nil {
				t.Fatalf("want a clean HTTP error response, got a broken exchange: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("status %d, want 500 (the auth server's mutation refused)", resp.StatusCode)
			}
			for k := range resp.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-foreign") || strings.EqualFold(k, "x-a") {
					t.Errorf("the client received the auth server's header %q", k)
				}
			}
			if after := c.Echo.Requests(); after != before {
				t.Errorf("the upstream received %d requests; an invalid mutation must stop the request", after-before)
			}
		})
	}
}
