package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// The ext_proc tests use a static Envoy bootstrap: the control plane's
// external processing support is its own issue.

// builtinConfig chains every built-in processor of the extprocserver binary.
const builtinConfig = `
processors:
- observe: {}
- deny:
    body: admin is read-only
    rules: [{path: {prefix: /admin}, methods: [DELETE]}]
- sizeLimit: {maxRequestBytes: 1024}
- routeByHeader:
    header: x-variant
    rules: [{headers: [{name: cookie, contains: "beta=1"}], value: canary}]
    default: stable
- headers:
    request:
      set: {x-route: "${method} ${path}"}
      remove: [x-debug]
    response:
      set: {x-seen-request-id: "${request_id}"}
- jsonRedact:
    request: ["$.password"]
    response: ["$.headers['X-Secret'][*]"]
`

// processingMode is an ext_proc processing_mode with both header phases
// sent and the given body mode in both directions.
func processingMode(body string) map[string]any {
	return map[string]any{
		"request_header_mode": "SEND", "response_header_mode": "SEND",
		"request_body_mode": body, "response_body_mode": body,
		"request_trailer_mode": "SKIP", "response_trailer_mode": "SKIP",
	}
}

// variantRoutes send requests carrying x-variant: canary to the canary
// upstream, everything else to echo: a re-route proves clear_route_cache.
// Both return the variant the processor put in dynamic metadata as a
// response header.
var variantRoutes = func() []map[string]any {
	metadataHeader := []any{map[string]any{"header": map[string]any{
		"key": "x-variant-metadata", "value": "%DYNAMIC_METADATA(portcullis.extproc:variant)%",
	}}}
	return []map[string]any{
		{"match": map[string]any{"prefix": "/", "headers": []any{map[string]any{"name": "x-variant", "string_match": map[string]any{"exact": "canary"}}}},
			"route": map[string]any{"cluster": "canary"}, "response_headers_to_add": metadataHeader},
		{"match": map[string]any{"prefix": "/"}, "route": map[string]any{"cluster": "echo"}, "response_headers_to_add": metadataHeader},
	}
}()

type reply struct {
	status int
	header http.Header
	body   []byte
	echo   *harness.EchoRequest // nil unless the body is an Echo answer
}

// send does one request through Envoy at addr.
func send(t *testing.T, addr, method, path string, body io.Reader, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, "http://app.example"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := harness.HTTPClient(addr).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.ContentLength >= 0 && int(resp.ContentLength) != len(b) {
		t.Errorf("%s %s: Content-Length %d but %d body bytes", method, path, resp.ContentLength, len(b))
	}
	if e, err := harness.DecodeEcho(b); err == nil && e.Name != "" {
		r.echo = e
	}
	return r
}

func (r reply) mustEcho(t *testing.T, what string) *harness.EchoRequest {
	t.Helper()
	if r.status != 200 || r.echo == nil {
		t.Fatalf("%s: status %d, body %q; want 200 from an echo upstream", what, r.status, r.body)
	}
	return r.echo
}

// chunked hides a body's length so that the client sends it chunked.
type chunked struct{ io.Reader }

func TestExtProcBuiltinProcessors(t *testing.T) {
	t.Parallel()
	stable, canary := harness.StartEcho(t, "stable"), harness.StartEcho(t, "canary")
	eps := harness.StartExtProcServer(t, builtinConfig)
	addrs := map[string]string{}
	var listeners []harness.StaticListener
	for _, mode := range []string{"NONE", "STREAMED", "BUFFERED", "BUFFERED_PARTIAL"} {
		addrs[mode] = harness.FreeAddr(t)
		fields := map[string]any{"processing_mode": processingMode(mode), "message_timeout": "5s"}
		if mode == "NONE" {
			// Envoy drops dynamic metadata from the server unless its
			// namespace is accepted.
			fields["metadata_options"] = map[string]any{"receiving_namespaces": map[string]any{"untyped": []string{"portcullis.extproc"}}}
		}
		listeners = append(listeners, harness.StaticListener{
			Name: strings.ToLower(mode), Addr: addrs[mode], Routes: variantRoutes,
			HTTPFilters: []map[string]any{harness.ExtProcFilter("extproc", fields)},
		})
	}
	harness.StartEnvoy(t, harness.WriteStaticBootstrap(t, listeners, []harness.StaticCluster{
		{Name: "extproc", Addr: eps.Addr, HTTP2: true},
		{Name: "echo", Addr: stable.Addr},
		{Name: "canary", Addr: canary.Addr},
	}))
	headersOnly := addrs["NONE"]

	t.Run("headers", func(t *testing.T) {
		r := send(t, headersOnly, "GET", "/hello?x=1", nil, "X-Debug", "1")
		e := r.mustEcho(t, "GET /hello")
		if got := e.Headers.Get("X-Route"); got != "GET /hello?x=1" {
			t.Errorf("upstream x-route = %q", got)
		}
		if _, ok := e.Headers["X-Debug"]; ok {
			t.Errorf("x-debug reached the upstream")
		}
		if id := e.Headers.Get("X-Request-Id"); id == "" || r.header.Get("X-Seen-Request-Id") != id {
			t.Errorf("x-seen-request-id %q, upstream x-request-id %q", r.header.Get("X-Seen-Request-Id"), id)
		}
	})

	t.Run("observe", func(t *testing.T) {
		r := send(t, headersOnly, "POST", "/upload", strings.NewReader("12345"))
		r.mustEcho(t, "POST /upload")
		if ms, err := strconv.ParseFloat(r.header.Get("X-Portcullis-Upstream-Ms"), 64); err != nil || ms < 0 {
			t.Errorf("x-portcullis-upstream-ms = %q", r.header.Get("X-Portcullis-Upstream-Ms"))
		}
		if got := r.header.Get("X-Portcullis-Request-Bytes"); got != "5" {
			t.Errorf("x-portcullis-request-bytes = %q, want 5", got)
		}
		if got := r.header.Get("X-Portcullis-Response-Bytes"); got != strconv.Itoa(len(r.body)) {
			t.Errorf("x-portcullis-response-bytes = %q, body is %d bytes", got, len(r.body))
		}
	})

	t.Run("deny", func(t *testing.T) {
		before := stable.Requests()
		r := send(t, headersOnly, "DELETE", "/admin/users", nil)
		if r.status != 403 || string(r.body) != "admin is read-only\n" {
			t.Errorf("DELETE /admin: %d %q", r.status, r.body)
		}
		if stable.Requests() != before {
			t.Errorf("the denied request reached the upstream")
		}
		send(t, headersOnly, "GET", "/admin/users", nil).mustEcho(t, "GET /admin is allowed")
	})

	t.Run("routeByHeader clears the route cache", func(t *testing.T) {
		if e := send(t, headersOnly, "GET", "/", nil, "Cookie", "beta=1").mustEcho(t, "beta user"); e.Name != "canary" || e.Headers.Get("X-Variant") != "canary" {
			t.Errorf("beta user reached %s with x-variant %q", e.Name, e.Headers.Get("X-Variant"))
		}
		if e := send(t, headersOnly, "GET", "/", nil, "X-Variant", "canary").mustEcho(t, "forged variant"); e.Name != "stable" || e.Headers.Get("X-Variant") != "stable" {
			t.Errorf("a client forging x-variant reached %s with x-variant %q", e.Name, e.Headers.Get("X-Variant"))
		}
	})

	t.Run("dynamic metadata", func(t *testing.T) {
		r := send(t, headersOnly, "GET", "/", nil, "Cookie", "beta=1")
		if got := r.header.Get("X-Variant-Metadata"); got != "canary" {
			t.Errorf("with receiving_namespaces: x-variant-metadata = %q, want canary", got)
		}
		r = send(t, addrs["STREAMED"], "GET", "/", nil, "Cookie", "beta=1")
		r.mustEcho(t, "beta user on a listener without receiving_namespaces")
		if got := r.header.Get("X-Variant-Metadata"); got == "canary" {
			t.Errorf("without receiving_namespaces Envoy kept the metadata")
		}
	})

	t.Run("sizeLimit", func(t *testing.T) {
		big := strings.Repeat("x", 2000)
		if r := send(t, headersOnly, "POST", "/upload", strings.NewReader(big)); r.status != 413 {
			t.Errorf("2000 bytes with Content-Length: %d %q", r.status, r.body)
		}
		// Chunked: only counting the streamed body can catch it.
		if r := send(t, addrs["STREAMED"], "POST", "/upload", chunked{strings.NewReader(big)}); r.status != 413 {
			t.Errorf("2000 bytes chunked: %d %q", r.status, r.body)
		}
		send(t, addrs["STREAMED"], "POST", "/upload", chunked{strings.NewReader("small")}).mustEcho(t, "small chunked body")
	})

	const secret = `{"user":"a","password":"hunter2"}`
	const redacted = `{"user":"a","password":"[REDACTED]"}`
	for _, mode := range []string{"BUFFERED", "BUFFERED_PARTIAL", "STREAMED"} {
		t.Run("jsonRedact "+mode, func(t *testing.T) {
			r := send(t, addrs[mode], "POST", "/login", strings.NewReader(secret), "Content-Type", "application/json", "X-Secret", "s3")
			e := r.mustEcho(t, "POST /login")
			if e.Body != redacted {
				t.Errorf("upstream body %q, want %q", e.Body, redacted)
			}
			if cl := e.Headers.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(e.Body)) {
				t.Errorf("upstream Content-Length %s for %d bytes", cl, len(e.Body))
			}
			// The upstream saw X-Secret; the client sees it masked.
			if got := e.Headers.Get("X-Secret"); got != "[REDACTED]" {
				t.Errorf("response JSON X-Secret = %q", got)
			}
			// Not JSON: untouched.
			e = send(t, addrs[mode], "POST", "/form", strings.NewReader("password=hunter2"), "Content-Type", "text/plain").mustEcho(t, "text body")
			if e.Body != "password=hunter2" {
				t.Errorf("a text body was changed to %q", e.Body)
			}
		})
	}
	t.Run("jsonRedact needs a body mode", func(t *testing.T) {
		e := send(t, headersOnly, "POST", "/login", strings.NewReader(secret), "Content-Type", "application/json").mustEcho(t, "no body mode")
		if e.Body != secret {
			t.Errorf("with request_body_mode NONE the body changed: %q", e.Body)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get("http://" + eps.MetricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			`portcullis_extprocserver_messages_total{outcome="immediate",phase="request_headers"}`,
			`portcullis_extprocserver_messages_total{outcome="continue",phase="request_body"}`,
			`portcullis_extprocserver_messages_total{outcome="continue",phase="response_body"}`,
			`portcullis_extprocserver_upstream_seconds_count{code_class="2xx"}`,
		} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// protocolProcessor drives Envoy behaviours from the request path: a slow
// phase, an error, a mode_override and an immediate response to the
// upstream's response.
type protocolProcessor struct {
	sdk.Continue
	cancelled chan string       // paths whose processing Envoy cancelled
	modes     chan sdk.BodyMode // request body mode seen on /mode
}

func (p *protocolProcessor) RequestHeaders(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	switch {
	case strings.HasPrefix(x.Path(), "/slow"):
		select {
		case <-ctx.Done():
			p.cancelled <- x.Path()
			return ctx.Err()
		case <-time.After(10 * time.Second):
			h.Set("x-slow", "finished")
		}
	case x.Path() == "/mode":
		p.modes <- x.RequestBodyMode
	case strings.HasPrefix(x.Path(), "/error"):
		return sdk.Errorf(codes.Internal, "processor failed")
	case strings.HasPrefix(x.Path(), "/override"):
		h.Set("x-override", "asked")
		return x.OverrideMode(&extprocv3.ProcessingMode{
			RequestHeaderMode: extprocv3.ProcessingMode_SEND, ResponseHeaderMode: extprocv3.ProcessingMode_SEND,
			RequestBodyMode: extprocv3.ProcessingMode_BUFFERED,
		})
	}
	return nil
}

func (p *protocolProcessor) RequestBody(_ context.Context, _ *sdk.Exchange, b *sdk.Body) error {
	b.Replace([]byte("replaced after mode_override"))
	return nil
}

func (p *protocolProcessor) ResponseHeaders(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
	if x.Path() == "/teapot" {
		x.Respond(sdk.TextResponse(418, "short and stout"))
	}
	return nil
}

// startSDKServer serves p with the SDK driver on loopback.
func startSDKServer(t *testing.T, p sdk.Processor) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	extprocsvcv3.RegisterExternalProcessorServer(srv, sdk.NewServer(p))
	go func() { _ = srv.Serve(lis) }() // returns when the cleanup stops it
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func TestExtProcProtocolThroughEnvoy(t *testing.T) {
	t.Parallel()
	echo := harness.StartEcho(t, "echo")
	proc := &protocolProcessor{cancelled: make(chan string, 16), modes: make(chan sdk.BodyMode, 1)}
	sdkAddr := startSDKServer(t, proc)
	listen := map[string]string{}
	var listeners []harness.StaticListener
	for name, fields := range map[string]map[string]any{
		"strict":           {"message_timeout": "0.2s", "failure_mode_allow": false},
		"failopen":         {"message_timeout": "0.2s", "failure_mode_allow": true},
		"override-allowed": {"allow_mode_override": true},
		"override-ignored": {"allow_mode_override": false},
	} {
		fields["processing_mode"] = processingMode("NONE")
		listen[name] = harness.FreeAddr(t)
		listeners = append(listeners, harness.StaticListener{Name: name, Addr: listen[name],
			HTTPFilters: []map[string]any{harness.ExtProcFilter("sdk", fields)}})
	}
	harness.StartEnvoy(t, harness.WriteStaticBootstrap(t, listeners, []harness.StaticCluster{
		{Name: "sdk", Addr: sdkAddr, HTTP2: true},
		{Name: "echo", Addr: echo.Addr},
	}))

	// waitCancelled: Envoy gave up on the stream and the processor saw its
	// context end.
	waitCancelled := func(t *testing.T, path string) {
		t.Helper()
		select {
		case got := <-proc.cancelled:
			if got != path {
				t.Errorf("cancelled %s, want %s", got, path)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("the processor of %s was never cancelled", path)
		}
	}

	t.Run("Envoy announces the body mode in protocol_config", func(t *testing.T) {
		send(t, listen["strict"], "GET", "/mode", nil).mustEcho(t, "GET /mode")
		if got := <-proc.modes; got != sdk.ModeNone {
			t.Errorf("request body mode %v, want NONE from protocol_config (the driver's Content-Length rule relies on it)", got)
		}
	})
	t.Run("slower than message_timeout fails closed", func(t *testing.T) {
		before := echo.Requests()
		r := send(t, listen["strict"], "GET", "/slow/strict", nil)
		if r.status != http.StatusGatewayTimeout {
			t.Errorf("status %d %q, want 504", r.status, r.body)
		}
		if echo.Requests() != before {
			t.Errorf("the request reached the upstream")
		}
		waitCancelled(t, "/slow/strict")
	})
	t.Run("slower than message_timeout with failure_mode_allow continues", func(t *testing.T) {
		e := send(t, listen["failopen"], "GET", "/slow/open", nil).mustEcho(t, "fail open")
		if e.Headers.Get("X-Slow") != "" {
			t.Errorf("the late processor's header arrived")
		}
		waitCancelled(t, "/slow/open")
	})
	t.Run("processor error fails closed", func(t *testing.T) {
		if r := send(t, listen["strict"], "GET", "/error", nil); r.status != http.StatusInternalServerError {
			t.Errorf("status %d %q, want 500", r.status, r.body)
		}
	})
	t.Run("processor error with failure_mode_allow continues", func(t *testing.T) {
		send(t, listen["failopen"], "GET", "/error", nil).mustEcho(t, "fail open on error")
	})
	t.Run("mode_override honoured with allow_mode_override", func(t *testing.T) {
		e := send(t, listen["override-allowed"], "POST", "/override", strings.NewReader("original")).mustEcho(t, "override allowed")
		if e.Body != "replaced after mode_override" || e.Headers.Get("X-Override") != "asked" {
			t.Errorf("upstream got body %q, x-override %q", e.Body, e.Headers.Get("X-Override"))
		}
		if cl := e.Headers.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(e.Body)) {
			t.Errorf("upstream Content-Length %s for %d bytes", cl, len(e.Body))
		}
	})
	t.Run("mode_override ignored without allow_mode_override", func(t *testing.T) {
		e := send(t, listen["override-ignored"], "POST", "/override", strings.NewReader("original")).mustEcho(t, "override ignored")
		if e.Body != "original" || e.Headers.Get("X-Override") != "asked" {
			t.Errorf("upstream got body %q, x-override %q", e.Body, e.Headers.Get("X-Override"))
		}
	})
	t.Run("immediate response to the upstream's response", func(t *testing.T) {
		before := echo.Requests()
		r := send(t, listen["override-ignored"], "GET", "/teapot", nil)
		if r.status != 418 || string(r.body) != "short and stout\n" {
			t.Errorf("status %d %q, want 418", r.status, r.body)
		}
		if echo.Requests() != before+1 {
			t.Errorf("the upstream was not asked first")
		}
	})
}

// TestExtProcExampleBootstrapIsValid keeps examples/extprocserver/envoy.yaml
// loadable by the Envoy the tests use.
func TestExtProcExampleBootstrapIsValid(t *testing.T) {
	t.Parallel()
	out, err := harness.RunCommand(harness.Tool(t, "envoy"), "--mode", "validate", "-c", harness.RepoRoot(t)+"/examples/extprocserver/envoy.yaml")
	if err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("envoy --mode validate: %v\n%s", err, out)
	}
}
