package cli

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extprocserver/internal/config"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/certs"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

const exampleConfig = "../../../examples/extprocserver/config.yaml"

// serve runs f as the command wires it on loopback port 0.
func serve(t *testing.T, f *config.File, mutate func(*serverkit.Options)) *serverkittest.Server {
	t.Helper()
	opts := serverkittest.Options()
	if mutate != nil {
		mutate(&opts)
	}
	return serverkittest.Start(t, opts, func(opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
		return NewServer(opts, logger, f)
	})
}

// TestServesOverMutualTLS: how Envoy should connect; a client without a
// certificate is refused.
func TestServesOverMutualTLS(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "extprocserver.test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse([]byte("processors:\n- headers: {request: {set: {x-tls: ok}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f, func(o *serverkit.Options) {
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = files.ServerCert, files.ServerKey, files.CA
	})
	clientCert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(certs []tls.Certificate) extprocsvcv3.ExternalProcessorClient {
		return extprocsvcv3.NewExternalProcessorClient(serverkittest.Dial(t, srv.Addr, grpc.WithTransportCredentials(credentials.NewTLS(
			&tls.Config{RootCAs: ca.Pool(), ServerName: "extprocserver.test", Certificates: certs}))))
	}
	got := sdktest.Mutation(sdktest.Open(t, dial([]tls.Certificate{clientCert})).RoundTrip(sdktest.RequestHeaders(true, ":path", "/")))
	if got != "=x-tls:ok" {
		t.Errorf("over mTLS: mutation %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := dial(nil).Process(ctx)
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("without a client certificate: %v, want Unavailable", err)
	}
}

// TestServesTheExampleConfig runs the example configuration as the command
// wires it and speaks ext_proc to it over a real loopback connection.
func TestServesTheExampleConfig(t *testing.T) {
	f, err := config.Load(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := srv.Conn
	client := extprocsvcv3.NewExternalProcessorClient(conn)

	denied := sdktest.Open(t, client).RoundTrip(sdktest.RequestHeaders(true, ":method", "DELETE", ":path", "/admin/x"))
	if denied.GetImmediateResponse().GetStatus().GetCode() != 403 {
		t.Errorf("DELETE /admin answered %v", denied)
	}
	s := sdktest.Open(t, client)
	got := sdktest.Mutation(s.RoundTrip(sdktest.RequestHeaders(true, ":method", "GET", ":path", "/a", "cookie", "beta=1", "x-debug", "1")))
	for _, want := range []string{"=x-portcullis-variant:canary", "=x-portcullis-route:GET /a", "-x-debug"} {
		if !strings.Contains(got, want) {
			t.Errorf("request mutation %q lacks %q", got, want)
		}
	}

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: extprocsvcv3.ExternalProcessor_ServiceDesc.ServiceName})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v", h, err)
	}
	resp, err := http.Get("http://" + srv.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`portcullis_extprocserver_messages_total{outcome="immediate",phase="request_headers"} 1`,
		`portcullis_extprocserver_messages_total{outcome="continue",phase="request_headers"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestCommandRejectsBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("processors:\n- deny: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--config is required"},
		{[]string{"serve", "--config", "/nonexistent.yaml"}, "no such file"},
		{[]string{"serve", "--config", bad}, "at least one rule"},
		{[]string{"serve", "--config", exampleConfig, "--log-format=xml"}, "log-format"},
		{[]string{"serve", "--config", exampleConfig, "extra"}, "unknown command"},
	} {
		cmd := NewRootCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestHelpDescribesEveryProcessor(t *testing.T) {
	var out strings.Builder
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"serve", "--help"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"--config", "--tls-ca-path", "--metrics-address", "processing_mode"}, config.Kinds...) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// TestPprofAddress: --pprof-address serves profiles on their own listener
// while the server runs, and nothing is served without it.
func TestPprofAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"serve", "--config", exampleConfig, "--address", "127.0.0.1:0", "--metrics-address", "", "--pprof-address", addr})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var status int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline"); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if status != http.StatusOK {
		t.Fatalf("/debug/pprof/cmdline: status %d, want 200", status)
	}
	if _, err := http.Get("http://" + addr + "/debug/pprof/cmdline"); err == nil {
		t.Errorf("pprof still served after the server stopped")
	}
}
