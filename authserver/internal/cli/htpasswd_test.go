package cli

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.opentelemetry.io/otel"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/authserver/internal/htpasswd"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestHtpasswdOverGRPC serves the htpasswd backend as the command wires it
// and checks over gRPC, then reads its metrics.
func TestHtpasswdOverGRPC(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(file, []byte("alice:"+string(hash)+"\nbroken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := serverkittest.Options()
	opts.Registry = serverkit.NewRegistry()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := htpasswd.New(htpasswd.Options{Realm: "staff", Registry: opts.Registry, Logger: logger,
		CacheSize: htpasswd.DefaultCacheSize, CacheTTL: htpasswd.DefaultCacheTTL})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddFile(file); err != nil {
		t.Fatal(err)
	}
	h.Start()
	srv := serve(t, opts, backend{name: htpasswd.Name, impl: h})

	client := authv3.NewAuthorizationClient(srv.Conn)
	creds := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:secret"))
	for range 2 {
		resp, err := client.Check(ctxT(t), checkRequest(nil, map[string]string{"authorization": creds}))
		if err != nil || resp.GetOkResponse() == nil {
			t.Fatalf("Check with credentials: %v, %v", resp, err)
		}
	}
	resp, err := client.Check(ctxT(t), checkRequest(nil, nil))
	if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != 401 {
		t.Fatalf("Check without credentials: %v, %v", resp, err)
	}
	metrics := scrape(t, srv.MetricsAddr)
	for _, want := range []string{
		`portcullis_authserver_checks_total{backend="htpasswd",result="allowed"} 2`,
		`portcullis_authserver_checks_total{backend="htpasswd",result="denied"} 1`,
		`portcullis_authserver_check_duration_seconds_count{backend="htpasswd",result="allowed"} 2`,
		`portcullis_authserver_htpasswd_users 1`,
		`portcullis_authserver_htpasswd_skipped_lines 1`,
		`portcullis_authserver_htpasswd_load_errors_total{reason="malformed_line"} 1`,
		`portcullis_authserver_htpasswd_cache_lookups_total{result="hit"} 1`,
		`portcullis_authserver_htpasswd_cache_lookups_total{result="miss"} 1`,
		`portcullis_authserver_htpasswd_hash_comparisons_total 1`,
		`portcullis_authserver_htpasswd_cache_entries 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "secret") && strings.Contains(metrics, "alice") {
		t.Error("/metrics mentions the user or password")
	}
}

func TestHtpasswdRejectsBadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"htpasswd"}, "no users"},
		{[]string{"htpasswd", "--secrets", "maybe", "--htpasswd-file", file}, "--secrets"},
		{[]string{"htpasswd", "--secrets", "off", "--htpasswd-file", file + ".missing"}, "--htpasswd-file"},
		{[]string{"htpasswd", "--secrets", "off", "--htpasswd-file", file, "--auth-realm", `a"b`}, "--auth-realm"},
		{[]string{"htpasswd", "--secrets", "off", "--htpasswd-file", file, "--cache-size", "-1"}, "--cache-size"},
		{[]string{"htpasswd", "--kubeconfig", file + ".missing"}, "Kubernetes client"},
		{[]string{"htpasswd", "--secrets", "on", "--kubeconfig", file, "--selector", "a=(b"}, "--selector"},
	} {
		err := execute(t, append(tc.args, "--address=127.0.0.1:0", "--metrics-address=")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}

// TestHtpasswdCommandTracesToOTLP runs "authserver htpasswd" as a
// Deployment with OTEL_EXPORTER_OTLP_ENDPOINT does: a check carrying
// Envoy's traceparent reaches the collector, after SIGTERM, as the Check
// span and htpasswd.verify beneath it, in Envoy's trace, from service
// portcullis-htpasswd.
func TestHtpasswdCommandTracesToOTLP(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(file, []byte("alice:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	col := serverkittest.StartOTLPCollector(t)
	for _, k := range []string{"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Cleanup(func() { otel.SetTracerProvider(tracenoop.NewTracerProvider()) }) // the command set the global one

	r := start(t, "htpasswd", "--secrets=off", "--htpasswd-file="+file)
	ctx, parent := serverkittest.RemoteParent(ctxT(t))
	creds := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:secret"))
	resp, err := authv3.NewAuthorizationClient(dial(t, r.addr, insecure.NewCredentials())).Check(ctx, checkRequest(nil, map[string]string{"authorization": creds}))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check: %v, %v", resp, err)
	}
	r.stop(t)

	tid := parent.TraceID()
	got := map[string]*tracepb.Span{}
	for _, s := range col.Spans() {
		if s.Service != "portcullis-htpasswd" || !bytes.Equal(s.Span.GetTraceId(), tid[:]) {
			t.Errorf("span %s of service %q in trace %x, want portcullis-htpasswd in %s", s.Span.GetName(), s.Service, s.Span.GetTraceId(), tid)
		}
		got[s.Span.GetName()] = s.Span
	}
	checkSpan, verify := got["envoy.service.auth.v3.Authorization/Check"], got["htpasswd.verify"]
	if checkSpan == nil || verify == nil {
		t.Fatalf("collector received %v, want the Check span and htpasswd.verify", slices.Collect(maps.Keys(got)))
	}
	if !bytes.Equal(verify.GetParentSpanId(), checkSpan.GetSpanId()) {
		t.Errorf("htpasswd.verify's parent %x, want the Check span %x", verify.GetParentSpanId(), checkSpan.GetSpanId())
	}
}
