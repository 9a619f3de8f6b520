package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSpecSample(t *testing.T) {
	// The sample configuration of docs/design/global-external-authorization.md, verbatim.
	c, err := Parse([]byte(`
globalExtAuth:
  extensionService: projectcontour-auth/htpasswd
  failOpen: false
  authPolicy:
    disabled: false
    context:
      header1: value1
      header2: value2
  responseTimeout: 1s
  withRequestBody:
    maxRequestBytes: 1024
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := c.GlobalExtAuth
	if ns, name := g.Ref(); ns != "projectcontour-auth" || name != "htpasswd" {
		t.Errorf("ref = %s/%s", ns, name)
	}
	if g.AuthPolicy.Context["header2"] != "value2" || g.ResponseTimeout != "1s" || g.WithRequestBody.MaxRequestBytes != 1024 {
		t.Errorf("decoded %+v", g)
	}
}

// An HTTP authorization server in the configuration file, with Contour's
// names (serviceAPIType, httpSettings).
func TestParseHTTPAuthorizationServer(t *testing.T) {
	c, err := Parse([]byte(`
globalExtAuth:
  extensionService: auth/http-auth
  serviceAPIType: http
  httpSettings:
    pathPrefix: /auth
    allowedAuthorizationHeaders: [{exact: x-token}]
    allowedUpstreamHeaders: [{prefix: x-auth-, ignoreCase: true}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := c.GlobalExtAuth
	h := g.HTTPServerSettings
	if g.ServiceAPIType != "http" || h == nil || h.PathPrefix != "/auth" || h.AllowedAuthorizationHeaders[0].Exact != "x-token" ||
		h.AllowedUpstreamHeaders[0].Prefix != "x-auth-" || !h.AllowedUpstreamHeaders[0].IgnoreCase {
		t.Errorf("decoded %+v %+v", g, h)
	}
}

func TestParseExtProcSample(t *testing.T) {
	// The globalExtProc sample of docs/design/external-processing.md.
	c, err := Parse([]byte(`
globalExtProc:
  disabled: false
  processor:
    grpcService:
      extensionRef:
        apiVersion: projectcontour.io/v1alpha1
        name: extproc-extsvc
        namespace: extproc-test
      failOpen: true
      responseTimeout: 60s
    mutationRules:
      allowAllRouting: true
    processingMode:
      requestBodyMode: NONE
      requestHeaderMode: SEND
      requestTrailerMode: SKIP
      responseBodyMode: NONE
      responseHeaderMode: SEND
      responseTrailerMode: SKIP
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.GlobalExtProc.Processor
	if p.GRPCService.ExtensionServiceRef.Name != "extproc-extsvc" || !p.GRPCService.FailOpen || !p.MutationRules.AllowAllRouting || p.ProcessingMode.RequestTrailerMode != "SKIP" {
		t.Errorf("decoded %+v", p)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown top-level field", "globalExtAuthz: {}", `c.yaml: globalExtAuthz: unknown field (known fields: extensions, gateway, globalExtAuth, globalExtProc, limits, rateLimitService)`},
		{"unknown gateway field", "gateway: {controller: a.b/c}", `c.yaml: gateway.controller: unknown field (known fields: addresses, controllerName, envoyService, experimentalChannel, servicePerGateway, udpSessionIdleTimeout)`},
		{"gateway address neither IP nor host name", "gateway: {addresses: [10.0.0.1, 'not an address']}", `gateway.addresses[1]: must be an IP address or a host name, got "not an address"`},
		{"envoy service without namespace", "gateway: {envoyService: envoy}", `gateway.envoyService: must be namespace/name, got "envoy"`},
		{"service per gateway without envoy service", "gateway: {servicePerGateway: true}", `gateway.servicePerGateway: needs gateway.envoyService`},
		{"UDP idle timeout not a duration", "gateway: {udpSessionIdleTimeout: soon}", `gateway.udpSessionIdleTimeout: must be a duration from 1s to 1h0m0s such as 30s, got "soon"`},
		{"UDP idle timeout too short", "gateway: {udpSessionIdleTimeout: 100ms}", `gateway.udpSessionIdleTimeout: must be a duration from 1s to 1h0m0s`},
		{"UDP idle timeout too long", "gateway: {udpSessionIdleTimeout: 2h}", `gateway.udpSessionIdleTimeout: must be a duration from 1s to 1h0m0s`},
		{"service per gateway with addresses", "gateway: {servicePerGateway: true, envoyService: a/b, addresses: [10.0.0.1]}", `gateway.servicePerGateway: excludes gateway.addresses`},
		{"controller name without a domain", "gateway: {controllerName: portcullis}", `gateway.controllerName: must be a domain-prefixed path`},
		{"unknown limit", "limits: {maxDepth: 3}", `c.yaml: limits.maxDepth: unknown field (known fields: maxIncludeDepth, maxIncludesPerRoot, maxRoutesPerVirtualHost)`},
		{"negative limit", "limits: {maxRoutesPerVirtualHost: -1}", `c.yaml: limits.maxRoutesPerVirtualHost: must be at least 1 (or 0 for the default), got -1`},
		{"limit not a number", "limits: {maxIncludeDepth: deep}", `c.yaml: limits.maxIncludeDepth: must be of type integer, got string`},
		{"unknown nested field", "globalExtAuth: {extensionService: a/b, withRequestBody: {maxBytes: 1}}", `c.yaml: globalExtAuth.withRequestBody.maxBytes: unknown field`},
		{"the drafted Go tag name is not the YAML name (docs/design/decisions.md)", "globalExtAuth: {extensionService: a/b, globalAuthPolicy: {}}", `globalExtAuth.globalAuthPolicy: unknown field`},
		{"wrong type", "globalExtAuth: {extensionService: a/b, failOpen: 'yes'}", `c.yaml: globalExtAuth.failOpen: must be of type boolean, got string`},
		{"missing extension service", "globalExtAuth: {failOpen: true}", `c.yaml: globalExtAuth.extensionService: is required`},
		{"extension service without namespace", "globalExtAuth: {extensionService: htpasswd}", `globalExtAuth.extensionService: must be namespace/name, got "htpasswd"`},
		{"bad timeout", "globalExtAuth: {extensionService: a/b, responseTimeout: 1 second}", `globalExtAuth.responseTimeout: "1 second" is not a duration`},
		{"negative timeout", "globalExtAuth: {extensionService: a/b, responseTimeout: -1s}", `globalExtAuth.responseTimeout: "-1s" is negative`},
		{"optOut forbidden with the global authorization off by default", "globalExtAuth: {extensionService: a/b, optOut: forbidden, authPolicy: {disabled: true}}", `globalExtAuth.optOut: forbidden contradicts authPolicy.disabled: true`},
		{"an unknown optOut", "globalExtAuth: {extensionService: a/b, optOut: never}", `globalExtAuth.optOut: must be allowed or forbidden, got "never"`},
		{"unknown service API type", "globalExtAuth: {extensionService: a/b, serviceAPIType: soap}", `globalExtAuth.serviceAPIType: "soap" is not supported: use grpc or http`},
		{"HTTP settings of a gRPC server", "globalExtAuth: {extensionService: a/b, httpSettings: {pathPrefix: /auth}}", `globalExtAuth.httpSettings: is only valid with serviceAPIType: http`},
		{"HTTP server with a context", "globalExtAuth: {extensionService: a/b, serviceAPIType: http, authPolicy: {context: {k: v}}}", `globalExtAuth.authPolicy.context: context extensions exist only in the gRPC protocol`},
		{"HTTP server with packAsBytes", "globalExtAuth: {extensionService: a/b, serviceAPIType: http, withRequestBody: {packAsBytes: true}}", `globalExtAuth.withRequestBody.packAsBytes: exists only in the gRPC protocol`},
		{"HTTP header matcher of two kinds", "globalExtAuth: {extensionService: a/b, serviceAPIType: http, httpSettings: {allowedUpstreamHeaders: [{exact: a, suffix: b}]}}", `globalExtAuth.httpSettings.allowedUpstreamHeaders[0]: set exactly one of exact, prefix, suffix and contains (2 set)`},
		{"HTTP path prefix not a path", "globalExtAuth: {extensionService: a/b, serviceAPIType: http, httpSettings: {pathPrefix: 'auth?x=1'}}", `globalExtAuth.httpSettings.pathPrefix: "auth?x=1" must start with /`},
		{"unknown HTTP settings field", "globalExtAuth: {extensionService: a/b, serviceAPIType: http, httpSettings: {path_prefix: /a}}", `globalExtAuth.httpSettings.path_prefix: unknown field`},
		{"rate limit service without extension service", "rateLimitService: {domain: d}", `rateLimitService.extensionService: is required`},
		{"rate limit service without namespace", "rateLimitService: {extensionService: rl, domain: d}", `rateLimitService.extensionService: must be namespace/name, got "rl"`},
		{"rate limit service without domain", "rateLimitService: {extensionService: a/rl}", `rateLimitService.domain: is required`},
		{"default rate limit policy without descriptors", "rateLimitService: {extensionService: a/rl, domain: d, defaultGlobalRateLimitPolicy: {}}", `rateLimitService.defaultGlobalRateLimitPolicy: set descriptors (or disabled: true)`},
		{"default rate limit policy disabled with descriptors", "rateLimitService: {extensionService: a/rl, domain: d, defaultGlobalRateLimitPolicy: {disabled: true, descriptors: [{entries: [{remoteAddress: {}}]}]}}", `rateLimitService.defaultGlobalRateLimitPolicy: disabled and descriptors cannot both be set`},
		{"rate limit service unknown field", "rateLimitService: {extensionService: a/rl, domain: d, failureModeDeny: true}", `rateLimitService.failureModeDeny: unknown field`},
		{"global auth disabled with a server", "globalExtAuth: {disabled: true, extensionService: a/b}", `globalExtAuth.disabled: excludes every other field`},
		{"global auth without server", "globalExtAuth: {failOpen: true}", `globalExtAuth.extensionService: is required`},
		{"not a mapping", "- a", `must be a mapping`},
		{"bad yaml", "globalExtAuth: [", `not valid YAML`},
		{"ext proc without processor", "globalExtProc: {disabled: false}", `globalExtProc: set processor (or disabled: true)`},
		{"ext proc without service", "globalExtProc: {processor: {}}", `globalExtProc.processor.grpcService: is required`},
		{"ext proc without namespace", "globalExtProc: {processor: {grpcService: {extensionRef: {name: p}}}}", `globalExtProc.processor.grpcService.extensionRef.namespace: is required`},
		{"ext proc bad kind", "globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns, kind: Service}}}}", `extensionRef.kind: "Service" is not supported`},
		{"ext proc bad header mode", "globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns}}, processingMode: {requestHeaderMode: SENT}}}", `globalExtProc.processor.processingMode.requestHeaderMode: "SENT" is not one of DEFAULT, SEND, SKIP`},
		{"ext proc bad body mode", "globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns}}, processingMode: {responseBodyMode: FULL}}}", `processingMode.responseBodyMode: "FULL" is not one of NONE, STREAMED, BUFFERED, BUFFERED_PARTIAL`},
		{"ext proc unknown mutation rule", "globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns}}, mutationRules: {allowAll: true}}}", `globalExtProc.processor.mutationRules.allowAll: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDefaultsAndEmpty(t *testing.T) {
	c, err := Parse([]byte("globalExtAuth: {extensionService: a/b, withRequestBody: {}}\nglobalExtProc: {disabled: true}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.GlobalExtAuth.WithRequestBody.MaxRequestBytes != 1024 {
		t.Errorf("maxRequestBytes default = %d, want 1024", c.GlobalExtAuth.WithRequestBody.MaxRequestBytes)
	}
	for _, in := range []string{"", "# nothing\n", "{}"} {
		c, err := Parse([]byte(in), "c.yaml")
		if err != nil || c.GlobalExtAuth != nil || c.GlobalExtProc != nil {
			t.Errorf("Parse(%q) = %+v, %v; want the empty configuration", in, c, err)
		}
	}
	want := Limits{MaxIncludeDepth: DefaultMaxIncludeDepth, MaxRoutesPerVirtualHost: DefaultMaxRoutesPerVirtualHost, MaxIncludesPerRoot: DefaultMaxIncludesPerRoot}
	if got := c.Limits.WithDefaults(); got != want {
		t.Errorf("default limits = %+v, want %+v", got, want)
	}
	c, err = Parse([]byte("limits: {maxIncludeDepth: 3}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want.MaxIncludeDepth = 3; c.Limits.WithDefaults() != want {
		t.Errorf("limits = %+v, want %+v", c.Limits.WithDefaults(), want)
	}
	if got := c.Gateway.Controller(); got != DefaultGatewayControllerName {
		t.Errorf("default controller name = %q", got)
	}
	if c, err := Parse([]byte("gateway: {controllerName: example.com/gateway}\n"), "c.yaml"); err != nil || c.Gateway.Controller() != "example.com/gateway" {
		t.Errorf("controller name = %+v, %v", c, err)
	}
	if c, err := Load(""); err != nil || c.GlobalExtAuth != nil {
		t.Errorf("Load(\"\") = %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !os.IsNotExist(err) {
		t.Errorf("Load(missing) error = %v, want not-exist", err)
	}
}

// TestExampleFile keeps the documented example (every field) loadable.
func TestExampleFile(t *testing.T) {
	c, err := Load("../../../examples/global-external-authorization/portcullis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.GlobalExtAuth == nil || c.GlobalExtProc == nil || c.GlobalExtProc.Processor.MutationRules == nil || c.GlobalExtAuth.WithRequestBody == nil || c.Limits.MaxIncludeDepth == 0 {
		t.Fatalf("the example should set every section: %+v", c)
	}
}

// FuzzParse: whatever the file, Parse returns a configuration or an error,
// never panics. Run longer with
// go test ./internal/config -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"globalExtAuth: {extensionService: a/b, withRequestBody: {}}",
		"globalExtProc: {processor: {grpcService: {extensionRef: {name: p, namespace: ns}}, processingMode: {requestHeaderMode: SEND}}}",
		"globalExtAuth: {authPolicy: {context: {a: b}}}",
		"[1, 2]",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if err == nil && c == nil {
			t.Fatal("no configuration and no error")
		}
	})
}

// The file accepts every timeout the CRDs accept (apicheck.ParseTimeout).
func TestConfigTimeoutInfinite(t *testing.T) {
	if _, err := Parse([]byte("globalExtAuth: {extensionService: a/b, responseTimeout: infinite}\n"), "c.yaml"); err != nil {
		t.Errorf("responseTimeout: infinite refused: %v", err)
	}
}

// The extensions section as docs/configuration.md shows it, every field
// set, decodes as written (extension.FromConfig checks the rest).
func TestExtensions(t *testing.T) {
	c, err := Parse([]byte(`
extensions:
- name: vendor
  address: 127.0.0.1:9443
  tls:
    caFile: /etc/portcullis/extension/ca.crt
    certFile: /etc/portcullis/extension/tls.crt
    keyFile: /etc/portcullis/extension/tls.key
    serverName: extension.vendor.svc
  hooks: [PostVirtualHostModify, PostHTTPListenerModify, PostTranslateInsert]
  timeout: 500ms
  failurePolicy: Open
  maxMessageSize: 16777216
  phaseBudget: 5s
  maxConcurrency: 4
  resources:
  - {group: examples.portcullis.dev, version: v1alpha1, kind: BasicAuthFilter}
  backendResources:
  - {group: examples.portcullis.dev, version: v1alpha1, kind: S3Bucket}
  policyResources:
  - {group: examples.portcullis.dev, version: v1alpha1, kind: RateLimitPolicy}
- name: second
  address: 127.0.0.1:9444
  hooks: [PostRouteModify]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Extensions) != 2 || c.Extensions[1].Name != "second" {
		t.Fatalf("extensions = %+v, want two, in order", c.Extensions)
	}
	e := &c.Extensions[0]
	want := Extension{Name: "vendor", Address: "127.0.0.1:9443",
		TLS: &ExtensionTLS{CAFile: "/etc/portcullis/extension/ca.crt", CertFile: "/etc/portcullis/extension/tls.crt",
			KeyFile: "/etc/portcullis/extension/tls.key", ServerName: "extension.vendor.svc"},
		Hooks:   []string{"PostVirtualHostModify", "PostHTTPListenerModify", "PostTranslateInsert"},
		Timeout: "500ms", FailurePolicy: "Open", MaxMessageSize: 16 << 20, PhaseBudget: "5s", MaxConcurrency: 4,
		Resources:        []GroupVersionKind{{"examples.portcullis.dev", "v1alpha1", "BasicAuthFilter"}},
		BackendResources: []GroupVersionKind{{"examples.portcullis.dev", "v1alpha1", "S3Bucket"}},
		PolicyResources:  []GroupVersionKind{{"examples.portcullis.dev", "v1alpha1", "RateLimitPolicy"}},
	}
	if !reflect.DeepEqual(*e, want) {
		t.Fatalf("extension = %+v, want %+v", *e, want)
	}
	if got := c.ExtensionKinds(); len(got) != 3 || got[0].Kind != "BasicAuthFilter" || got[2].Kind != "RateLimitPolicy" {
		t.Errorf("ExtensionKinds = %v, want the three kinds in order", got)
	}
	timeout, budget, errs := e.Durations("extensions[0]")
	if timeout != 500*time.Millisecond || budget != 5*time.Second || errs != nil {
		t.Errorf("durations = %v, %v, %v; want 500ms, 5s", timeout, budget, errs)
	}
	if c, err := Parse([]byte("{}"), "c.yaml"); err != nil || c.Extensions != nil {
		t.Errorf("no extensions section: %+v, %v; want no extension", c, err)
	}
}

// The extensions section is decoded strictly, like the rest.
func TestExtensionErrors(t *testing.T) {
	const ok = "name: x, address: ext:9443, hooks: [PostTranslateModify]"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"unknown field", "extensions: [{" + ok + ", failOpen: true}]", []string{"c.yaml: extensions[0].failOpen: unknown field (known fields: address, allowLocalEndpoints, backendResources, dialect, extensionService, failurePolicy, hooks, maxConcurrency, maxMessageSize, mayRemoveAll, name, phaseBudget, policyResources, resources, retry, timeout, tls, translation)"}},
		{"the singular section is gone", "extension: {" + ok + "}", []string{"c.yaml: extension: unknown field"}},
		{"unknown tls field", "extensions: [{" + ok + ", tls: {ca: x}}]", []string{"extensions[0].tls.ca: unknown field (known fields: caFile, caSecret, certFile, clientCertificateSecret, keyFile, serverName)"}},
		{"unknown kind field", "extensions: [{" + ok + ", resources: [{group: a, version: v1, kind: K, plural: ks}]}]", []string{"extensions[0].resources[0].plural: unknown field (known fields: group, kind, version)"}},
		{"hooks not a list", "extensions: [{address: ext:9443, hooks: PostRouteModify}]", []string{"extensions[0].hooks: must be of type"}},
		{"size not a number", "extensions: [{" + ok + ", maxMessageSize: big}]", []string{"extensions[0].maxMessageSize: must be of type integer, got string"}},
		{"bad durations", "extensions: [{" + ok + "}, {" + ok + ", timeout: 1 second, phaseBudget: soon}]",
			[]string{`extensions[1].timeout: must be a duration such as 1s or 500ms, got "1 second"`, `extensions[1].phaseBudget: must be a duration such as 1s or 500ms, got "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "c.yaml")
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestGlobalExtAuthOptOut(t *testing.T) {
	for _, tc := range []struct {
		yaml      string
		forbidden bool
	}{
		{"globalExtAuth: {extensionService: a/b}", false},
		{"globalExtAuth: {extensionService: a/b, optOut: allowed}", false},
		{"globalExtAuth: {extensionService: a/b, optOut: forbidden}", true},
	} {
		c, err := Parse([]byte(tc.yaml), "c.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := c.GlobalExtAuth.OptOutForbidden(); got != tc.forbidden {
			t.Errorf("%s: OptOutForbidden() = %v, want %v", tc.yaml, got, tc.forbidden)
		}
	}
	if (*GlobalExtAuth)(nil).OptOutForbidden() {
		t.Error("no global authorization forbids opting out of it")
	}
}

// gateway.udpSessionIdleTimeout: the default when unset, the value when
// set.
func TestUDPIdleTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"": time.Minute, "3s": 3 * time.Second, "1h": time.Hour} {
		if got := (Gateway{UDPSessionIdleTimeout: in}).UDPIdleTimeout(); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
