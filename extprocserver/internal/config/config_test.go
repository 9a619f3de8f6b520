package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	st "github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// TestProcessors builds each built-in processor from YAML and plays an
// exchange through the real driver; each step names the answer it expects.
func TestProcessors(t *testing.T) {
	type step struct {
		req  *extprocsvcv3.ProcessingRequest
		want string // "immediate:<status>" or the header mutation, plus " body=<body>" when replaced
	}
	for _, tc := range []struct {
		name, yaml string
		steps      []step
	}{
		{"headers with templates", `
processors:
- headers:
    request:
      set: {x-route: "${method} ${path}", X-Literal: "cost $$5"}
      append: {x-trace: "${request_header.x-user}"}
      remove: [x-internal]
    response:
      set: {x-request-id: "${request_id}", x-status: "${status}"}
`, []step{
			{st.RequestHeaders(true, ":method", "GET", ":path", "/a?b", "x-user", "u1", "x-request-id", "rid"), "-x-internal =x-literal:cost $5 =x-route:GET /a?b +x-trace:u1"},
			{st.ResponseHeaders(true, ":status", "404"), "=x-request-id:rid =x-status:404"},
		}},
		{"deny by path prefix and method", `
processors:
- deny:
    status: 451
    body: blocked
    headers: {x-denied-by: portcullis}
    rules:
    - path: {prefix: /admin}
      methods: [delete]
`, []step{
			{st.RequestHeaders(true, ":method", "DELETE", ":path", "/admin/users?x=1"), "immediate:451 blocked =content-type:text/plain; charset=utf-8 =x-denied-by:portcullis"},
		}},
		{"deny lets others through", `
processors:
- deny:
    rules:
    - headers: [{name: X-Debug, exact: "1"}]
    - path: {regex: "/internal/.*"}
`, []step{
			{st.RequestHeaders(true, ":method", "GET", ":path", "/public", "x-debug", "0"), ""},
			{st.ResponseHeaders(true, ":status", "200"), ""},
		}},
		{"deny header rule", `
processors:
- deny:
    rules:
    - headers: [{name: X-Debug, exact: "1"}]
`, []step{
			{st.RequestHeaders(true, ":path", "/", "x-debug", "1"), "immediate:403 Forbidden =content-type:text/plain; charset=utf-8"},
		}},
		{"size limit from content-length", `
processors:
- sizeLimit: {maxRequestBytes: 10}
`, []step{
			{st.RequestHeaders(false, ":path", "/", "content-length", "11"), "immediate:413 request body larger than 10 bytes =content-type:text/plain; charset=utf-8"},
		}},
		{"size limit counting streamed chunks", `
processors:
- sizeLimit: {maxRequestBytes: 10}
`, []step{
			{st.WithModes(st.RequestHeaders(false, ":path", "/"), sdk.ModeStreamed, sdk.ModeNone), ""},
			{st.RequestBody("123456", false), ""},
			{st.RequestBody("12345", false), "immediate:413 request body larger than 10 bytes =content-type:text/plain; charset=utf-8"},
		}},
		{"json redaction in buffered mode fixes content-length", `
processors:
- jsonRedact:
    request: ["$.password"]
    response: ["$..token"]
    replacement: "*"
`, []step{
			{st.WithModes(st.RequestHeaders(false, ":path", "/", "content-type", "application/json", "content-length", "33"), sdk.ModeBuffered, sdk.ModeBuffered), ""},
			{st.RequestBody(`{"user":"a","password":"hunter2"}`, true), `=content-length:27 body={"user":"a","password":"*"}`},
			{st.ResponseHeaders(false, ":status", "200", "content-type", "application/json", "content-length", "21"), ""},
			{st.ResponseBody(`{"a":{"token":"xyz"}}`, true), `=content-length:19 body={"a":{"token":"*"}}`},
		}},
		{"json redaction passes non-JSON and streamed chunks", `
processors:
- jsonRedact: {request: ["$.password"], response: ["$.password"]}
`, []step{
			{st.WithModes(st.RequestHeaders(false, ":path", "/", "content-type", "text/plain"), sdk.ModeBuffered, sdk.ModeStreamed), ""},
			{st.RequestBody(`{"password":"x"}`, true), ""},
			{st.ResponseHeaders(false, ":status", "200", "content-type", "application/json"), ""},
			{st.ResponseBody(`{"password":`, false), ""},
			{st.ResponseBody(`"x"}`, true), ""},
		}},
		{"ndjson redaction streams in full duplex mode", `
processors:
- ndjsonRedact: {request: ["$.password"], replacement: "XX"}
`, []step{
			{st.WithModes(st.RequestHeaders(false, ":path", "/", "content-type", "application/x-ndjson"), sdk.ModeFullDuplex, sdk.ModeNone), ""},
			{st.RequestBody(`{"password":"a"}`+"\n"+`{"pass`, false), `streamed={"password":"XX"}`},
			{st.RequestBody(`word":"b"}`, true), `streamed={"password":"XX"}|eos`},
		}},
		{"route by header rule", `
processors:
- routeByHeader:
    header: x-variant
    rules:
    - headers: [{name: cookie, contains: "beta=1"}]
      value: canary
    default: stable
`, []step{
			{st.RequestHeaders(true, ":path", "/", "cookie", "a=b; beta=1", "x-variant", "forged"), "=x-variant:canary clear_route_cache"},
		}},
		{"route by header removes a forged header", `
processors:
- routeByHeader:
    header: x-variant
    split: {value: canary, percent: 0}
`, []step{
			{st.RequestHeaders(true, ":path", "/", "x-variant", "canary"), "-x-variant clear_route_cache"},
		}},
		{"route by header sticky split", `
processors:
- routeByHeader:
    header: x-variant
    split: {value: canary, percent: 100, stickyHeader: x-user}
`, []step{
			{st.RequestHeaders(true, ":path", "/", "x-user", "42"), "=x-variant:canary clear_route_cache"},
		}},
		{"observe and headers chained", `
processors:
- observe: {headerPrefix: "x-o-"}
- headers:
    response:
      set: {x-after: "${response_header.x-o-request-bytes}"}
`, []step{
			{st.WithModes(st.RequestHeaders(false, ":path", "/"), sdk.ModeStreamed, sdk.ModeNone), ""},
			{st.RequestBody("abc", false), ""},
			{st.RequestBody("de", true), ""},
			{st.ResponseHeaders(false, ":status", "200", "content-length", "7"), "=x-o-upstream-ms:* =x-o-request-bytes:5 =x-o-response-bytes:7 =x-after:5"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := st.Open(t, st.Serve(t, build(t, tc.yaml, prometheus.NewRegistry())))
			for i, step := range tc.steps {
				got := describe(s.RoundTrip(step.req))
				if !matchWild(step.want, got) {
					t.Errorf("step %d: got %q, want %q", i, got, step.want)
				}
			}
		})
	}
}

// TestDenyAndRouteOnNormalisedPaths: other spellings of a denied path are
// denied, paths that cannot be normalised are denied by a rule with a path
// condition (fail closed) and never pick a variant by path.
func TestDenyAndRouteOnNormalisedPaths(t *testing.T) {
	deny := build(t, `
processors:
- deny:
    rules:
    - path: {exact: /admin}
    - path: {prefix: /internal/}
      methods: [DELETE]
    - path: {prefix: /Secret/, ignoreCase: true}
`, nil)
	route := build(t, `
processors:
- routeByHeader:
    header: x-variant
    rules: [{path: {prefix: /v2/}, value: v2}]
    default: stable
`, nil)
	for _, tc := range []struct {
		path, method string
		deny         string // details of the 403, or "" for no answer
		variant      string
	}{
		{"/admin", "GET", "portcullis_deny_rule_0", "stable"},
		{"/admin?x=1", "GET", "portcullis_deny_rule_0", "stable"},
		{"//admin", "GET", "portcullis_deny_rule_0", "stable"},
		{"/%61dmin", "GET", "portcullis_deny_rule_0", "stable"},
		{"/admin/../admin", "GET", "portcullis_deny_rule_0", "stable"},
		{"/./admin", "GET", "portcullis_deny_rule_0", "stable"},
		{"/ADMIN", "GET", "", "stable"}, // case-sensitive, as Envoy's own matching
		{"/admin/", "GET", "", "stable"},
		{"/internal//x", "DELETE", "portcullis_deny_rule_1", "stable"},
		{"/x/../internal/y", "DELETE", "portcullis_deny_rule_1", "stable"},
		{"/internal/y", "GET", "", "stable"},
		{"/SECRET/x", "GET", "portcullis_deny_rule_2", "stable"},
		{"/v2/x", "GET", "", "v2"},
		{"/v1/../v2/x", "GET", "", "v2"},
		{"/%2F", "GET", "portcullis_deny_rule_0_unsafe_path", "stable"},
		{"/v2/a%2Fb", "GET", "portcullis_deny_rule_0_unsafe_path", "stable"},
		{"/v2/a%zz", "GET", "portcullis_deny_rule_0_unsafe_path", "stable"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := st.Open(t, st.Serve(t, deny)).RoundTrip(st.RequestHeaders(true, ":method", tc.method, ":path", tc.path))
			got := ""
			if ir := r.GetImmediateResponse(); ir != nil {
				got = ir.GetDetails()
				if ir.GetStatus().GetCode() != 403 {
					t.Errorf("status %d, want 403", ir.GetStatus().GetCode())
				}
			}
			if got != tc.deny {
				t.Errorf("deny: got %q, want %q", got, tc.deny)
			}
			r = st.Open(t, st.Serve(t, route)).RoundTrip(st.RequestHeaders(true, ":method", tc.method, ":path", tc.path))
			if got, want := st.Mutation(r), "=x-variant:"+tc.variant; got != want {
				t.Errorf("routeByHeader: got %q, want %q", got, want)
			}
		})
	}
}

// TestHeadersRefuseInvalidValues: a template that renders an invalid header
// value fails the message (Internal: Envoy answers 500, or continues
// without the change with failure_mode_allow) and sends none of its changes.
func TestHeadersRefuseInvalidValues(t *testing.T) {
	p := build(t, `
processors:
- headers:
    request:
      set: {x-user: "user=${request_header.x-in}", x-static: "s"}
      remove: [x-internal]
    response:
      append: {x-echo: "${request_header.x-in}${request_header.x-in}"}
`, nil)
	long := strings.Repeat("a", sdk.MaxHeaderValue/2+1)
	for _, tc := range []struct {
		name, in  string
		req, resp string // mutation, or "error" for a failed stream
	}{
		{"valid", "u1", "-x-internal =x-static:s =x-user:user=u1", "+x-echo:u1u1"},
		{"tab is valid", "a\tb", "-x-internal =x-static:s =x-user:user=a\tb", "+x-echo:a\tba\tb"},
		{"CR LF", "u1\r\nx-admin: 1", "error", ""},
		{"LF", "u1\nx", "error", ""},
		{"NUL", "u1\x00", "error", ""},
		{"too long once repeated", long, "-x-internal =x-static:s =x-user:user=" + long, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := st.Open(t, st.Serve(t, p))
			for _, step := range []struct {
				req  *extprocsvcv3.ProcessingRequest
				want string
			}{
				{st.RequestHeaders(true, ":path", "/", "x-in", tc.in), tc.req},
				{st.ResponseHeaders(true, ":status", "200"), tc.resp},
			} {
				if err := s.Send(step.req); err != nil {
					t.Fatal(err)
				}
				r, err := s.Recv()
				if step.want != "error" {
					if err != nil || st.Mutation(r) != step.want {
						t.Fatalf("got %.80q, %v; want %.80q", st.Mutation(r), err, step.want)
					}
					continue
				}
				if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "template rendered an invalid header value") {
					t.Fatalf("got %.80q, %v; want the stream to fail with Internal", st.Mutation(r), err)
				}
				return
			}
		})
	}
}

// build parses a configuration and builds its processor, registering its
// metrics with reg.
func build(t *testing.T, yaml string, reg prometheus.Registerer) sdk.Processor {
	t.Helper()
	f, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Build(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// describe renders an answer in the form the table uses.
func describe(r *extprocsvcv3.ProcessingResponse) string {
	if ir := r.GetImmediateResponse(); ir != nil {
		return strings.TrimSpace("immediate:" + strconv.Itoa(int(ir.GetStatus().GetCode())) + " " + strings.TrimSpace(string(ir.GetBody())) + " " + st.Mutation(r))
	}
	out := st.Mutation(r)
	if c := st.Common(r); c.GetClearRouteCache() {
		out = strings.TrimSpace(out + " clear_route_cache")
	}
	if sr := st.Common(r).GetBodyMutation().GetStreamedResponse(); sr != nil {
		out = strings.TrimSpace(out + " streamed=" + string(sr.GetBody()))
		if sr.GetEndOfStream() {
			out += "|eos"
		}
	} else if b := st.Common(r).GetBodyMutation(); b != nil {
		out = strings.TrimSpace(out + " body=" + string(b.GetBody()))
	}
	return out
}

// matchWild compares with "*" in want matching any run of non-space text.
func matchWild(want, got string) bool {
	wf, gf := strings.Fields(want), strings.Fields(got)
	if !strings.Contains(want, "*") {
		return want == got
	}
	if len(wf) != len(gf) {
		return false
	}
	for i := range wf {
		pre, post, wild := strings.Cut(wf[i], "*")
		if !wild && wf[i] != gf[i] || wild && (!strings.HasPrefix(gf[i], pre) || !strings.HasSuffix(gf[i], post)) {
			return false
		}
	}
	return true
}

func TestObserveMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := st.Open(t, st.Serve(t, build(t, "processors:\n- observe: {headerPrefix: \"-\"}\n", reg)))
	s.RoundTrip(st.RequestHeaders(true, ":path", "/"))
	if got := st.Mutation(s.RoundTrip(st.ResponseHeaders(true, ":status", "503"))); got != "" {
		t.Errorf("headers disabled but got %q", got)
	}
	// A series per status class from the start; the one exchange is
	// counted once, in the 503's.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() != "portcullis_extprocserver_upstream_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if c := m.GetHistogram().GetSampleCount(); c > 0 {
					got = append(got, fmt.Sprintf("%s=%s count=%d", l.GetName(), l.GetValue(), c))
				}
			}
		}
	}
	if want := []string{"code_class=5xx count=1"}; !slices.Equal(got, want) {
		t.Errorf("upstream histogram = %q, want %q", got, want)
	}
}

func TestBadConfigs(t *testing.T) {
	// Each is refused for its own reason (want is part of the message).
	for name, tc := range map[string]struct{ yaml, want string }{
		"empty":                   {"", "at least one processor"},
		"no processors":           {"processors: []", "at least one processor"},
		"unknown field":           {"processors:\n- headers: {request: {sett: {a: b}}}", "unknown field \"sett\""},
		"unknown kind":            {"processors:\n- lua: {}", "unknown field \"lua\""},
		"no kind":                 {"processors:\n- name: x", "set one processor kind"},
		"two kinds":               {"processors:\n- {deny: {rules: [{path: {prefix: /}}]}, observe: {}}", "only one processor kind"},
		"bad template":            {"processors:\n- headers: {request: {set: {x: '${nope}'}}}", "unknown variable ${nope}"},
		"lone dollar":             {"processors:\n- headers: {request: {set: {x: 'a $ b'}}}", "a lone $"},
		"pseudo header":           {"processors:\n- headers: {request: {set: {':path': /x}}}", "pseudo-headers"},
		"header name not a token": {"processors:\n- headers: {request: {set: {'x(y)': v}}}", "not an HTTP token"},
		"header name with NUL":    {"processors:\n- headers: {response: {append: {\"x\\0y\": v}}}", "not an HTTP token"},
		"remove name not a token": {"processors:\n- headers: {request: {remove: ['x@y']}}", "not an HTTP token"},
		"header value with CRLF":  {"processors:\n- headers: {request: {set: {x: \"a\\r\\nx-injected: 1\"}}}", "not a valid header value"},
		"header value with LF":    {"processors:\n- headers: {response: {set: {x: \"${status}\\n\"}}}", "not a valid header value"},
		"deny header with LF":     {"processors:\n- deny: {headers: {x: \"a\\nb\"}, rules: [{path: {prefix: /}}]}", "headers x: invalid value"},
		"deny header bad name":    {"processors:\n- deny: {headers: {'x y': a}, rules: [{path: {prefix: /}}]}", "not an HTTP token"},
		"route bad header name":   {"processors:\n- routeByHeader: {header: 'x variant', default: a}", "request header name is required"},
		"route value with CR":     {"processors:\n- routeByHeader: {header: x, default: \"a\\rb\"}", "not a valid header value"},
		"deny without rules":      {"processors:\n- deny: {}", "at least one rule"},
		"deny empty rule":         {"processors:\n- deny: {rules: [{}]}", "a rule needs at least one of"},
		"deny two matchers":       {"processors:\n- deny: {rules: [{path: {prefix: /a, exact: /b}}]}", "set exactly one of"},
		"deny bad regex":          {"processors:\n- deny: {rules: [{path: {regex: '('}}]}", "regex"},
		"deny bad status":         {"processors:\n- deny: {status: 99, rules: [{path: {prefix: /}}]}", "status 99"},
		"deny absent and value":   {"processors:\n- deny: {rules: [{headers: [{name: a, absent: true, exact: b}]}]}", "absent excludes a value matcher"},
		"deny unnormalised path":  {"processors:\n- deny: {rules: [{path: {prefix: //admin}}]}", `never matches: requests are matched on the normalised path; write "/admin"`},
		"size zero":               {"processors:\n- sizeLimit: {maxRequestBytes: 0}", "maxRequestBytes must be > 0"},
		"redact nothing":          {"processors:\n- jsonRedact: {}", "set at least one path"},
		"ndjson bad max line":     {"processors:\n- ndjsonRedact: {request: [$.a], maxLineBytes: -1}", "maxLineBytes -1"},
		"ndjson nothing":          {"processors:\n- ndjsonRedact: {maxLineBytes: 10}", "set at least one path"},
		"redact bad path":         {"processors:\n- jsonRedact: {request: [password]}", "must start with $"},
		"route no header":         {"processors:\n- routeByHeader: {default: a}", "request header name is required"},
		"route nothing":           {"processors:\n- routeByHeader: {header: x}", "set rules, split or default"},
		"route bad percent":       {"processors:\n- routeByHeader: {header: x, split: {value: a, percent: 101}}", "percent must be 0-100"},
		"route rule no value":     {"processors:\n- routeByHeader: {header: x, rules: [{path: {prefix: /}}]}", "rules[0]: value is required"},
		"not yaml":                {"processors: [", "yaml"},
	} {
		f, err := Parse([]byte(tc.yaml))
		if err == nil {
			_, err = f.Build(nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, tc.want)
		} else if testing.Verbose() {
			t.Logf("%s: %v", name, err)
		}
	}
}
