package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	tracedHost     = "traced.oidc.test"
	tracedApp      = "https://" + tracedHost
	processedHost  = "processed.oidc.test"
	slowProcHost   = "slowproc.oidc.test"
	envoyService   = "portcullis-envoy" // tracing.serviceName
	tracingNS      = "observability"
	checkSpanName  = "envoy.service.auth.v3.Authorization/Check"
	processSpan    = "envoy.service.ext_proc.v3.ExternalProcessor/Process"
	stampProcessor = "processor stamp"
)

// TestTracingJoinsEnvoyAndServers runs the real control plane with
// tracing to a real Jaeger (an ExtensionService), the real Envoy, the real
// OIDC authorization server with its real provider, and the real
// extprocserver, the servers exporting to the same Jaeger
// (OTEL_EXPORTER_OTLP_ENDPOINT). A sign-in is one trace holding Envoy's
// span, the Check span and the provider calls beneath it; a processed
// request one trace holding Envoy's span, the Process span and the
// processor's. The provider answers the callback's calls a second late,
// and a processor is reached through a peer that answers two seconds
// late: the spans' durations say where the time went. Envoy's JSON access
// log has the same trace IDs and the authorization's decision, reason and
// user.
func TestTracingJoinsEnvoyAndServers(t *testing.T) {
	jaeger := harness.StartJaeger(t)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + jaeger.OTLPAddr, "OTEL_BSP_SCHEDULE_DELAY=200"}

	// The provider, behind a peer faithful until the callback.
	opPort := harness.FreePort(t)
	slowOP := harness.StartSlowPeer(t, fmt.Sprintf("127.0.0.1:%d", opPort))
	op := harness.StartOIDCProvider(t, harness.OIDCProviderConfig{
		ClientID: oidcClientID, ClientSecret: oidcClientPass, RedirectURIs: []string{tracedApp + "/oauth2/callback"},
		TokenTTL: time.Minute, Port: opPort, Issuer: "http://" + slowOP.Addr,
	})
	authAddr := startTracedAuthServer(t, op.Issuer, otel)
	proc := harness.StartExtProcServerEnv(t, "processors:\n- name: stamp\n  headers: {request: {set: {x-processed-by: stamp}}}\n", otel)
	slowProc := harness.StartSlowPeer(t, proc.Addr)
	slowProc.SetFault(harness.Fault{Delay: 2 * time.Second})
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-tracing-e2e")

	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`tracing:
  extensionService: %s/jaeger
  serviceName: %s
  customTags:
  - {tagName: test.case, requestHeaderName: X-Test-Case}
accessLog:
  format: json
`, tracingNS, envoyService))
	dir := t.TempDir()
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr, "--provider", "file", "-f", dir, "--config", cfg)
	envoy := harness.StartEnvoyOn(t, cp.XDSAddr)
	objects := tracingObjects(t, ca, echo.Port, map[string]string{
		"jaeger": jaeger.OTLPAddr, "oidc": authAddr, "proc": proc.Addr, "proc-slow": slowProc.Addr,
	})
	if err := harness.Dir(dir).Apply(context.Background(), objects...); err != nil {
		t.Fatal(err)
	}
	https := harness.HTTPSClient(ca.CertPEM, httpsAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.WaitHTTPWith(ctx, https, "https://"+processedHost+"/ready", http.StatusOK); err != nil {
		t.Fatalf("the stack does not serve: %v", err)
	}

	t.Run("a sign-in is one trace: Envoy, the Check, the provider calls", func(t *testing.T) {
		b := newBrowser(t, &oidcStack{Stack: &harness.Stack{HTTPSAddr: httpsAddr}, ca: ca, op: op})
		b.beforeCallback = func() { slowOP.SetFault(harness.Fault{Delay: time.Second}) }
		f := b.signIn(tracedApp+"/", "alice", nil)
		slowOP.SetFault(harness.Fault{})
		b.echo(f.final)
		b.echo(b.get(tracedApp+"/signed-in", "X-Test-Case", "signed-in"))

		tr := waitTrace(t, jaeger, "oidc.code_exchange")
		root := envoyRoot(t, tr)
		check := only(t, tr, checkSpanName)
		if p, ok := tr.Parent(check); !ok || tr.Service(p) != envoyService {
			t.Errorf("the Check span's parent is %q of %q, want Envoy's span", p.OperationName, tr.Service(p))
		}
		exchange := only(t, tr, "oidc.code_exchange")
		wantBeneath(t, tr, exchange, check)
		wantBeneath(t, tr, only(t, tr, "oidc.jwks_fetch"), check)
		wantHTTPClientChild(t, tr, exchange, "POST")
		// Two provider calls, each a second late, inside the Check,
		// inside Envoy's span.
		for _, d := range []struct {
			span JaegerSpan
			min  time.Duration
		}{{exchange, 900 * time.Millisecond}, {check, 1800 * time.Millisecond}, {root, 1800 * time.Millisecond}} {
			if d.span.Took() < d.min {
				t.Errorf("%s took %v, want at least %v (the provider answered late)", d.span.OperationName, d.span.Took(), d.min)
			}
		}

		t.Logf("the sign-in's trace:\n%s", describe(tr))

		signedIn := waitTraceTagged(t, jaeger, "signed-in")
		only(t, signedIn, checkSpanName)
		wantLogged(t, envoy, "/oauth2/callback", tr.TraceID, "redirect", "callback", "")
		wantLogged(t, envoy, "/signed-in", signedIn.TraceID, "allowed", "session", "alice")
	})

	t.Run("a processed request is one trace: Envoy, the Process, the processor", func(t *testing.T) {
		for _, tc := range []struct {
			host, tag string
			slow      bool
		}{{processedHost, "processed", false}, {slowProcHost, "slow-processor", true}} {
			start := time.Now()
			resp := get(t, https, "https://"+tc.host+"/p", "X-Test-Case", tc.tag)
			took := time.Since(start)
			if e := decodeEchoBody(t, resp); e.Headers.Get("X-Processed-By") != "stamp" {
				t.Fatalf("%s: the upstream did not see the processor's header: %v", tc.host, e.Headers)
			}
			tr := waitTraceTagged(t, jaeger, tc.tag)
			root := envoyRoot(t, tr)
			process := only(t, tr, processSpan)
			parent, ok := tr.Parent(process)
			if !ok || tr.Service(parent) != envoyService {
				t.Errorf("%s: the Process span's parent is %q of %q, want Envoy's", tc.host, parent.OperationName, tr.Service(parent))
			}
			processor := only(t, tr, stampProcessor)
			wantBeneath(t, tr, processor, process)
			if processor.Took() > time.Second {
				t.Errorf("%s: the processor took %v: it does nothing slow", tc.host, processor.Took())
			}
			t.Logf("%s's trace:\n%s", tc.host, describe(tr))
			// No authorization on this host: no decision in the log.
			wantLogged(t, envoy, "/p", tr.TraceID, "-", "-", "")
			if !tc.slow {
				continue
			}
			// The peer held the answer two seconds: Envoy's span and its
			// call to the processor show it, the processor's own does not.
			if took < 2*time.Second || root.Took() < 2*time.Second || parent.Took() < 2*time.Second {
				t.Errorf("through the slow peer: request %v, Envoy's span %v, its ext_proc call %v; want each at least 2s", took, root.Took(), parent.Took())
			}
		}
	})
}

// JaegerSpan is harness.JaegerSpan, short.
type JaegerSpan = harness.JaegerSpan

// startTracedAuthServer runs `authserver oidc` for tracedHost against the
// provider at issuer, exporting its spans (env), and returns its address.
func startTracedAuthServer(t *testing.T, issuer string, env []string) string {
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "cookie-key")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	config := filepath.Join(t.TempDir(), "oidc.yaml")
	writeTestFile(t, config, fmt.Sprintf(`issuer: %s
allowInsecureIssuer: true
clientID: %s
clientSecretEnv: OIDC_CLIENT_SECRET
scopes: [openid, email, profile]
allowedRedirectHosts: [%s]
cookie:
  keyFile: %s
`, issuer, oidcClientID, tracedHost, keyFile))
	addr, metrics := harness.FreeAddr(t), harness.FreeAddr(t)
	p := harness.NewProcess(t, "authserver-oidc", harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver"),
		"oidc", "--config", config, "--address", addr, "--metrics-address", metrics)
	p.Env = append([]string{"OIDC_CLIENT_SECRET=" + oidcClientPass}, env...)
	p.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, addr); err != nil {
		t.Fatalf("authserver oidc at %s: %v", addr, err)
	}
	return addr
}

// tracingObjects are the test's objects: an h2c ExtensionService for each
// of servers (name: address) in tracingNS, the echo upstream, and the
// three hosts: tracedHost behind the OIDC server, processedHost and
// slowProcHost with the processor, directly and through the slow peer.
func tracingObjects(t *testing.T, ca *harness.CA, echoPort int, servers map[string]string) []client.Object {
	h2c := "h2c"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tracingNS}},
		ca.Issue(t, tracedHost, processedHost, slowProcHost).Secret("default", "tracing-tls"),
	}
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, echoPort)...)
	for name, addr := range servers {
		objs = append(objs, harness.LoopbackEndpointSlice(tracingNS, name, 9000, harness.Port(t, addr))...)
		objs = append(objs, &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: tracingNS, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}})
	}
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	host := func(name, fqdn string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn, TLS: &contourv1.TLS{SecretName: "tracing-tls"}},
				Routes:      []contourv1.Route{{Services: echo}},
			}}
	}
	traced := host("traced", tracedHost)
	traced.Spec.VirtualHost.Authorization = &contourv1.AuthorizationServer{
		ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: tracingNS, Name: "oidc"},
		ResponseTimeout:     "10s",
	}
	processed := func(name, fqdn, ext string) *contourv1.HTTPProxy {
		p := host(name, fqdn)
		p.Spec.VirtualHost.ExtProc = &contourv1.ExternalProcessor{Processor: &contourv1.ExtProc{
			GRPCService: &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: tracingNS, Name: ext}, ResponseTimeout: "5s"},
			ProcessingMode: &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSkip,
				RequestBodyMode: contourv1.ProcessingModeNone, ResponseBodyMode: contourv1.ProcessingModeNone},
		}}
		return p
	}
	return append(objs, traced, processed("processed", processedHost, "proc"), processed("slow-processor", slowProcHost, "proc-slow"))
}

// waitTrace waits (Envoy exports every few seconds) for the trace of
// Envoy's service that holds a span named name, and returns it whole.
func waitTrace(t *testing.T, j *harness.Jaeger, name string) harness.JaegerTrace {
	t.Helper()
	return waitTraceWhere(t, j, "a span "+name, func(tr harness.JaegerTrace) bool { return len(spansNamed(tr, name)) > 0 })
}

// waitTraceTagged is waitTrace for the trace whose Envoy span has the
// test.case tag (the X-Test-Case request header: tracing.customTags).
func waitTraceTagged(t *testing.T, j *harness.Jaeger, tag string) harness.JaegerTrace {
	t.Helper()
	return waitTraceWhere(t, j, "test.case "+tag, func(tr harness.JaegerTrace) bool {
		for _, s := range tr.Spans {
			if tr.Service(s) == envoyService && s.Tag("test.case") == tag {
				return true
			}
		}
		return false
	})
}

// waitTraceWhere waits for one of Envoy's traces that match says is the
// one, complete: the servers export on their own schedule, so it waits
// until the trace stops growing.
func waitTraceWhere(t *testing.T, j *harness.Jaeger, what string, match func(harness.JaegerTrace) bool) harness.JaegerTrace {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var found harness.JaegerTrace
	stable := 0
	for time.Now().Before(deadline) {
		traces, err := j.Traces(envoyService)
		if err != nil {
			t.Fatal(err)
		}
		var now harness.JaegerTrace
		for _, tr := range traces {
			if match(tr) {
				now = tr
			}
		}
		if now.TraceID != "" && now.TraceID == found.TraceID && len(now.Spans) == len(found.Spans) {
			if stable++; stable >= 3 {
				return now
			}
		} else {
			stable = 0
		}
		found = now
		time.Sleep(time.Second)
	}
	if found.TraceID != "" {
		return found
	}
	t.Fatalf("no trace of %s with %s in Jaeger after 45s", envoyService, what)
	return found
}

func spansNamed(tr harness.JaegerTrace, name string) []JaegerSpan {
	var out []JaegerSpan
	for _, s := range tr.Spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

// only is the trace's one span named name.
func only(t *testing.T, tr harness.JaegerTrace, name string) JaegerSpan {
	t.Helper()
	s := spansNamed(tr, name)
	if len(s) != 1 {
		t.Fatalf("trace %s has %d spans %q, want 1:\n%s", tr.TraceID, len(s), name, describe(tr))
	}
	return s[0]
}

// envoyRoot is the trace's root span, which must be Envoy's.
func envoyRoot(t *testing.T, tr harness.JaegerTrace) JaegerSpan {
	t.Helper()
	for _, s := range tr.Spans {
		if _, ok := tr.Parent(s); !ok && len(s.References) == 0 {
			if tr.Service(s) != envoyService {
				t.Fatalf("trace %s's root %q is %s's, want Envoy's:\n%s", tr.TraceID, s.OperationName, tr.Service(s), describe(tr))
			}
			return s
		}
	}
	t.Fatalf("trace %s has no root span:\n%s", tr.TraceID, describe(tr))
	return JaegerSpan{}
}

// wantBeneath fails unless ancestor is above s in the trace.
func wantBeneath(t *testing.T, tr harness.JaegerTrace, s, ancestor JaegerSpan) {
	t.Helper()
	for p, ok := tr.Parent(s); ok; p, ok = tr.Parent(p) {
		if p.SpanID == ancestor.SpanID {
			return
		}
	}
	t.Errorf("%q is not beneath %q in trace %s:\n%s", s.OperationName, ancestor.OperationName, tr.TraceID, describe(tr))
}

// wantHTTPClientChild fails unless s has an HTTP client span (the
// provider call as otelhttp records it) with method beneath it.
func wantHTTPClientChild(t *testing.T, tr harness.JaegerTrace, s JaegerSpan, method string) {
	t.Helper()
	for _, c := range tr.Spans {
		if p, ok := tr.Parent(c); ok && p.SpanID == s.SpanID && c.Tag("span.kind") == "client" &&
			(c.Tag("http.request.method") == method || c.Tag("http.method") == method) {
			return
		}
	}
	t.Errorf("%q has no HTTP %s client span beneath it:\n%s", s.OperationName, method, describe(tr))
}

// describe lists a trace's spans, indented under their parents, with
// service and duration: what a failure shows.
func describe(tr harness.JaegerTrace) string {
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range tr.Spans {
			p, ok := tr.Parent(s)
			if (ok && p.SpanID == parent) || (!ok && parent == "") {
				fmt.Fprintf(&b, "%s%s [%s] %v\n", strings.Repeat("  ", depth), s.OperationName, tr.Service(s), s.Took())
				walk(s.SpanID, depth+1)
			}
		}
	}
	walk("", 0)
	return b.String()
}

// accessLogs are Envoy's JSON access log lines so far (its standard
// output, amid its own log).
func accessLogs(t *testing.T, envoy *harness.Envoy) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(envoy.Logs(), "\n") {
		var m map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil && m["path"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// wantLogged fails unless Envoy logs, within 15 s (it flushes its access
// log every few seconds), a line for path with the trace ID and the
// authorization's decision, reason and user ("-" for none; user "" for
// none as well).
func wantLogged(t *testing.T, envoy *harness.Envoy, path, traceID, authz, reason, user string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !logged(accessLogs(t, envoy), path, traceID) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	logs := accessLogs(t, envoy)
	field := func(m map[string]any, k string) string {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
		return "-"
	}
	var seen []string
	for _, m := range logs {
		if m["path"] != path {
			continue
		}
		// Jaeger writes trace IDs without their leading zeros.
		if strings.TrimLeft(field(m, "trace_id"), "0") != strings.TrimLeft(traceID, "0") {
			seen = append(seen, fmt.Sprint(m))
			continue
		}
		wantUser := user
		if wantUser == "" {
			wantUser = "-"
		}
		if got := [3]string{field(m, "authz"), field(m, "authz_reason"), field(m, "user")}; got != [3]string{authz, reason, wantUser} {
			t.Errorf("access log of %s: authz, reason, user = %q, want %q, %q, %q: %v", path, got, authz, reason, wantUser, m)
		}
		return
	}
	t.Errorf("no access log line for %s with trace %s; lines for it: %v", path, traceID, seen)
}

// logged reports whether logs have a line for path with the trace ID.
func logged(logs []map[string]any, path, traceID string) bool {
	for _, m := range logs {
		if id, _ := m["trace_id"].(string); m["path"] == path && strings.TrimLeft(id, "0") == strings.TrimLeft(traceID, "0") {
			return true
		}
	}
	return false
}

// get sends a GET with the header pairs and returns the response, read.
func get(t *testing.T, c *http.Client, u string, header ...string) *page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &page{Response: resp, body: string(body)}
}

func decodeEchoBody(t *testing.T, p *page) *harness.EchoRequest {
	t.Helper()
	if p.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", p.Request.URL, p.StatusCode, p.body)
	}
	e, err := harness.DecodeEcho([]byte(p.body))
	if err != nil {
		t.Fatalf("%s: not from the upstream: %v", p.Request.URL, err)
	}
	return e
}
