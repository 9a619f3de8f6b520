package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/authserver/internal/htpasswd"
	"github.com/portcullis/portcullis/authserver/internal/testserver"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/certs"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serve runs backend b as the command wires it on loopback port 0 until
// the test ends.
func serve(t *testing.T, opts serverkit.Options, b backend) *serverkittest.Server {
	t.Helper()
	return serverkittest.Start(t, opts, func(opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
		return newServer(opts, logger, b)
	})
}

// startTestserver runs the testserver backend as the command wires it, on
// loopback port 0.
func startTestserver(t *testing.T, mutate func(*serverkit.Options)) *serverkittest.Server {
	t.Helper()
	opts := serverkittest.Options()
	if mutate != nil {
		mutate(&opts)
	}
	return serve(t, opts, backend{name: testserver.Name, impl: testserver.New(slog.New(slog.NewTextHandler(io.Discard, nil)))})
}

// execute runs the command with args, its output discarded.
func execute(t *testing.T, args ...string) error {
	t.Helper()
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.ExecuteContext(ctxT(t))
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	return serverkittest.Dial(t, addr, grpc.WithTransportCredentials(creds))
}

func checkRequest(context map[string]string, headers map[string]string) *authv3.CheckRequest {
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		ContextExtensions: context,
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Host: "app.example", Path: "/", Headers: headers,
		}},
	}}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestTestserverOverPlaintextGRPC(t *testing.T) {
	srv := startTestserver(t, nil)
	before := scrape(t, srv.MetricsAddr)
	for _, want := range []string{
		`portcullis_authserver_checks_total{backend="testserver",result="allowed"} 0`,
		`portcullis_authserver_checks_total{backend="testserver",result="denied"} 0`,
	} {
		if !strings.Contains(before, want) {
			t.Errorf("/metrics before any check lacks %s", want)
		}
	}

	client := authv3.NewAuthorizationClient(srv.Conn)
	resp, err := client.Check(ctxT(t), checkRequest(map[string]string{"key1": "value1"}, map[string]string{"auth_handler": "forged"}))
	if err != nil {
		t.Fatal(err)
	}
	ok := resp.GetOkResponse()
	got := map[string]string{}
	for _, h := range ok.GetHeaders() {
		got[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	if got["Auth-Handler"] != "testserver" || got["Auth-Context-Key1"] != "value1" {
		t.Errorf("upstream headers = %v", got)
	}
	if strings.Join(ok.GetHeadersToRemove(), ",") != "auth_handler" {
		t.Errorf("headers_to_remove = %v", ok.GetHeadersToRemove())
	}

	resp, err = client.Check(ctxT(t), checkRequest(map[string]string{testserver.DenyKey: "403"}, nil))
	if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != 403 {
		t.Fatalf("deny: %v, %v", resp, err)
	}

	after := scrape(t, srv.MetricsAddr)
	for _, want := range []string{
		`portcullis_authserver_checks_total{backend="testserver",result="allowed"} 1`,
		`portcullis_authserver_checks_total{backend="testserver",result="denied"} 1`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="envoy.service.auth.v3.Authorization",grpc_type="unary"} 2`,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	h, err := healthpb.NewHealthClient(srv.Conn).
		Check(ctxT(t), &healthpb.HealthCheckRequest{Service: "envoy.service.auth.v3.Authorization"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of the Authorization service = %v, %v", h, err)
	}
}

func TestTestserverOverMutualTLS(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "authserver.test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := startTestserver(t, func(o *serverkit.Options) {
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = files.ServerCert, files.ServerKey, files.CA
	})
	clientCert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	withCert := credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "authserver.test", Certificates: []tls.Certificate{clientCert}})
	noCert := credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "authserver.test"})

	_, err = authv3.NewAuthorizationClient(dial(t, srv.Addr, noCert)).Check(ctxT(t), checkRequest(nil, nil))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Check without client certificate: %v, want Unavailable", err)
	}
	resp, err := authv3.NewAuthorizationClient(dial(t, srv.Addr, withCert)).Check(ctxT(t), checkRequest(nil, nil))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check with client certificate: %v, %v", resp, err)
	}
}

// syncBuffer collects the command's log output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is the command run by start.
type running struct {
	addr   string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// start runs the command with args (plus a loopback address and JSON
// logs) and learns the gRPC address from its log; it is stopped, the way
// SIGTERM does, when the test ends unless stop is called first.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{logs: &syncBuffer{}, done: make(chan error, 1)}
	cmd := NewRootCommand()
	cmd.SetArgs(append(args, "--address=127.0.0.1:0", "--metrics-address=", "--log-format=json"))
	cmd.SetOut(r.logs)
	cmd.SetErr(r.logs)
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { r.stop(t) })

	for deadline := time.Now().Add(10 * time.Second); r.addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		sc := bufio.NewScanner(strings.NewReader(r.logs.String()))
		for sc.Scan() {
			var line struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving gRPC" {
				r.addr = line.Address
			}
		}
	}
	if r.addr == "" {
		t.Fatalf("no 'serving gRPC' log line; logs:\n%s", r.logs.String())
	}
	return r
}

// stop cancels the command and wants it to return nil.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.done == nil {
		return
	}
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("command returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("command did not stop")
	}
	r.done = nil
}

// TestCommandRunsAndStops runs "authserver testserver" itself and stops it
// the way SIGTERM does.
func TestCommandRunsAndStops(t *testing.T) {
	r := start(t, "testserver")
	resp, err := authv3.NewAuthorizationClient(dial(t, r.addr, insecure.NewCredentials())).Check(ctxT(t), checkRequest(nil, nil))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check: %v, %v", resp, err)
	}
	r.stop(t)
}

func TestCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"testserver", "--tls-cert-path=x"},
		{"testserver", "--tls-ca-path=ca.pem"},
		{"testserver", "--log-format=xml"},
		{"testserver", "extra-arg"},
	} {
		if err := execute(t, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestHelpExplainsEachCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"envoy.service.auth.v3.Authorization/Check", "ext_authz", "testserver", "--tls-ca-path", "--metrics-address", "portcullis_authserver_checks_total"}},
		{[]string{"testserver"}, []string{testserver.DenyKey, testserver.RedirectKey, "Auth-Handler", "Auth-Context-"}},
		{[]string{"htpasswd"}, []string{"projectcontour.io/auth-type: basic", "projectcontour.io/auth-realm", htpasswd.RealmKey,
			"--allow-insecure-hashes", "--watch-namespaces", "--selector", "--htpasswd-file", "Auth-Username", "WWW-Authenticate",
			"portcullis_authserver_htpasswd_cache_lookups_total"}},
		{[]string{"oidc"}, []string{"--config", "PKCE", "oidc.portcullis.dev/groups", "oidc.portcullis.dev/api",
			"WWW-Authenticate: Bearer", "portcullis_authserver_oidc_events_total", "docs/authserver-oidc.md"}},
	} {
		var out bytes.Buffer
		cmd := NewRootCommand()
		cmd.SetArgs(append(tc.args, "--help"))
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("authserver %s --help lacks %q", strings.Join(tc.args, " "), want)
			}
		}
	}
}
