package sdk_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// funcs is a Processor built from optional functions; nil phases continue.
type funcs struct {
	sdk.Continue
	reqH, respH, reqT, respT func(context.Context, *sdk.Exchange, *sdk.Headers) error
	reqB, respB              func(context.Context, *sdk.Exchange, *sdk.Body) error
}

// call runs fn, or continues when the test left that phase nil.
func call[T any](fn func(context.Context, *sdk.Exchange, T) error, ctx context.Context, x *sdk.Exchange, v T) error {
	if fn == nil {
		return nil
	}
	return fn(ctx, x, v)
}

func (f funcs) RequestHeaders(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return call(f.reqH, ctx, x, h)
}
func (f funcs) ResponseHeaders(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return call(f.respH, ctx, x, h)
}
func (f funcs) RequestTrailers(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return call(f.reqT, ctx, x, h)
}
func (f funcs) ResponseTrailers(ctx context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return call(f.respT, ctx, x, h)
}
func (f funcs) RequestBody(ctx context.Context, x *sdk.Exchange, b *sdk.Body) error {
	return call(f.reqB, ctx, x, b)
}
func (f funcs) ResponseBody(ctx context.Context, x *sdk.Exchange, b *sdk.Body) error {
	return call(f.respB, ctx, x, b)
}

type event struct {
	phase   sdk.Phase
	outcome string
}

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) observe(p sdk.Phase, _ time.Duration, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{p, outcome})
}

func (r *recorder) get() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// kind names the response oneof, to check that answers come in order.
func kind(r *extprocsvcv3.ProcessingResponse) string {
	switch r.GetResponse().(type) {
	case *extprocsvcv3.ProcessingResponse_RequestHeaders:
		return "request_headers"
	case *extprocsvcv3.ProcessingResponse_ResponseHeaders:
		return "response_headers"
	case *extprocsvcv3.ProcessingResponse_RequestBody:
		return "request_body"
	case *extprocsvcv3.ProcessingResponse_ResponseBody:
		return "response_body"
	case *extprocsvcv3.ProcessingResponse_RequestTrailers:
		return "request_trailers"
	case *extprocsvcv3.ProcessingResponse_ResponseTrailers:
		return "response_trailers"
	case *extprocsvcv3.ProcessingResponse_ImmediateResponse:
		return "immediate"
	}
	return "none"
}

// protobufCodec makes start serve without sdk.Codec (see
// TestDriverWithProtobufCodec).
var protobufCodec bool

// start serves p with the driver and an observer.
func start(t *testing.T, p sdk.Processor) (extprocsvcv3.ExternalProcessorClient, *recorder) {
	rec := &recorder{}
	grpcOpts := sdk.ServerOptions()
	if protobufCodec {
		grpcOpts = nil
	}
	return sdktest.ServeGRPC(t, grpcOpts, p, sdk.WithObserver(rec.observe)), rec
}

// TestDriverWithProtobufCodec runs the driver's table tests again with
// gRPC's standard codec, which decodes every message in full: Codec's
// lazy header maps and prebuilt answers must change nothing Envoy sees,
// in any body mode.
func TestDriverWithProtobufCodec(t *testing.T) {
	protobufCodec = true
	defer func() { protobufCodec = false }()
	for name, test := range map[string]func(*testing.T){
		"HeaderMutationsAreNetDiffs":         TestHeaderMutationsAreNetDiffs,
		"InvalidHeadersNeverReachEnvoy":      TestInvalidHeadersNeverReachEnvoy,
		"HeadersReadWhatEnvoySent":           TestHeadersReadWhatEnvoySent,
		"EveryModeAnswersEachMessageInOrder": TestEveryModeAnswersEachMessageInOrder,
		"ImmediateResponseAtEveryPhase":      TestImmediateResponseAtEveryPhase,
		"RouteCacheMetadataAndModeOverride":  TestRouteCacheMetadataAndModeOverride,
		"ObservabilityModeSendsNothing":      TestObservabilityModeSendsNothing,
		"ExchangeState":                      TestExchangeState,
		"FullDuplexStreamed":                 TestFullDuplexStreamed,
		"MetadataIsTheLatestMessages":        TestMetadataIsTheLatestMessages,
	} {
		t.Run(name, test)
	}
}

func open(t *testing.T, c extprocsvcv3.ExternalProcessorClient) *sdktest.Stream {
	return sdktest.Open(t, c)
}

func roundTrip(t *testing.T, s *sdktest.Stream, req *extprocsvcv3.ProcessingRequest) *extprocsvcv3.ProcessingResponse {
	t.Helper()
	return s.RoundTrip(req)
}

var (
	reqHeaders     = sdktest.RequestHeaders
	respHeaders    = sdktest.ResponseHeaders
	reqBody        = sdktest.RequestBody
	respBody       = sdktest.ResponseBody
	reqTrailers    = sdktest.RequestTrailers
	respTrailers   = sdktest.ResponseTrailers
	withMode       = sdktest.WithModes
	common         = sdktest.Common
	mutationString = sdktest.MutationString
)

// expectEOF checks that the server closed the stream with OK.
func expectEOF(t *testing.T, s *sdktest.Stream) {
	t.Helper()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last answer: %v, want a clean close (EOF)", err)
	}
}

func TestHeaderMutationsAreNetDiffs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *sdk.Headers)
		want string
	}{
		{"nothing", func(*sdk.Headers) {}, ""},
		{"set", func(h *sdk.Headers) { h.Set("X-A", "1") }, "=x-a:1"},
		{"add twice", func(h *sdk.Headers) { h.Add("x-a", "1"); h.Add("x-a", "2") }, "+x-a:1 +x-a:2"},
		{"set then add", func(h *sdk.Headers) { h.Set("x-a", "1"); h.Add("x-a", "2") }, "=x-a:1 +x-a:2"},
		{"del", func(h *sdk.Headers) { h.Del("x-old") }, "-x-old"},
		{"del then set", func(h *sdk.Headers) { h.Del("x-old"); h.Set("x-old", "new") }, "=x-old:new"},
		{"set then del", func(h *sdk.Headers) { h.Set("x-a", "1"); h.Del("x-a") }, "-x-a"},
		{"several names keep order", func(h *sdk.Headers) { h.Set("b", "1"); h.Del("a"); h.Add("c", "3") }, "-a =b:1 +c:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := start(t, funcs{reqH: func(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error { tc.edit(h); return nil }})
			s := open(t, c)
			resp := roundTrip(t, s, reqHeaders(true, ":path", "/", "x-old", "v"))
			if got := mutationString(common(resp).GetHeaderMutation()); got != tc.want {
				t.Errorf("mutation = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInvalidHeadersNeverReachEnvoy: a change Envoy must not see (CR, LF,
// NUL, a bad name, an oversized value) fails the message with Internal in
// every phase that sends headers, instead of being sent.
func TestInvalidHeadersNeverReachEnvoy(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hname, value string
		del          bool // Del(hname) instead of Add(hname, value)
		ok           bool
	}{
		{name: "valid with tab and obs-text", hname: "x-a", value: "a\tb \xff", ok: true},
		{name: "pseudo-header", hname: ":path", value: "/x", ok: true},
		{name: "longest value", hname: "x-a", value: strings.Repeat("v", sdk.MaxHeaderValue), ok: true},
		{name: "CR LF in value", hname: "x-a", value: "v\r\nx-injected: 1"},
		{name: "LF in value", hname: "x-a", value: "v\nx"},
		{name: "NUL in value", hname: "x-a", value: "v\x00x"},
		{name: "DEL in value", hname: "x-a", value: "v\x7f"},
		{name: "value too long", hname: "x-a", value: strings.Repeat("v", sdk.MaxHeaderValue+1)},
		{name: "space in name", hname: "x a", value: "v"},
		{name: "LF in name", hname: "x-a\nx-b", value: "v"},
		{name: "separator in name", hname: "x(a)", value: "v"},
		{name: "empty name", hname: "", value: "v"},
		{name: "bare colon", hname: ":", value: "v"},
		{name: "removed bad name", hname: "x-a\r\n", del: true},
	} {
		for _, phase := range []string{"request headers", "response headers", "request trailers", "immediate response"} {
			if tc.del && phase == "immediate response" {
				continue // an immediate response only sets headers
			}
			t.Run(tc.name+"/"+phase, func(t *testing.T) {
				f := func(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error {
					h.Set("x-ok", "fine")
					if tc.del {
						h.Del(tc.hname)
					} else {
						h.Add(tc.hname, tc.value)
					}
					return nil
				}
				var p funcs
				req := reqHeaders(true, ":path", "/")
				switch phase {
				case "request headers":
					p.reqH = f
				case "response headers":
					p.respH, req = f, respHeaders(true, ":status", "200")
				case "request trailers":
					p.reqT, req = f, reqTrailers("x-t", "1")
				case "immediate response":
					p.reqH = func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
						r := sdk.TextResponse(403, "no")
						r.Headers[tc.hname] = []string{tc.value}
						x.Respond(r)
						return nil
					}
				}
				c, rec := start(t, p)
				s := open(t, c)
				if err := s.Send(req); err != nil {
					t.Fatal(err)
				}
				resp, err := s.Recv()
				if tc.ok {
					if err != nil {
						t.Fatalf("valid change refused: %v", err)
					}
					return
				}
				if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "invalid header") {
					t.Fatalf("got answer %.80q, error %v; want Internal: invalid header", sdktest.Mutation(resp), err)
				}
				if ev := rec.get(); len(ev) != 1 || ev[0].outcome != sdk.OutcomeError {
					t.Errorf("observed %+v", ev)
				}
			})
		}
	}
}

// TestHeadersReadWhatEnvoySent: value and raw_value, repeated and
// upper-case names, and an Add to one name leaving its neighbours alone
// (the driver packs the values of a message together).
func TestHeadersReadWhatEnvoySent(t *testing.T) {
	got := map[string][]string{}
	c, _ := start(t, funcs{reqH: func(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error {
		h.Add("x-a", "added")
		h.Add("x-dup", "3")
		for _, k := range []string{"x-a", "x-b", "x-dup", "x-upper", "x-empty", ":path"} {
			got[k] = h.Values(k)
		}
		return nil
	}})
	hv := func(k, v string, raw bool) *corev3.HeaderValue {
		if raw {
			return &corev3.HeaderValue{Key: k, RawValue: []byte(v)}
		}
		return &corev3.HeaderValue{Key: k, Value: v}
	}
	req := &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocsvcv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			hv(":path", "/p", true), hv("x-a", "1", true), hv("x-b", "2", false), hv("x-dup", "1", true),
			hv("X-Upper", "u", true), hv("x-dup", "2", false), hv("x-empty", "", true),
		}},
	}}}
	roundTrip(t, open(t, c), req)
	want := map[string][]string{
		"x-a": {"1", "added"}, "x-b": {"2"}, "x-dup": {"1", "2", "3"}, "x-upper": {"u"}, "x-empty": {""}, ":path": {"/p"},
	}
	for k, w := range want {
		if strings.Join(got[k], ",") != strings.Join(w, ",") || len(got[k]) != len(w) {
			t.Errorf("Values(%q) = %q, want %q", k, got[k], w)
		}
	}
}

// The driver receives every message of a stream into one request: a
// message the codec decodes in full (here: with attributes) after one it
// left lazy must not see the earlier header map.
func TestHeadersOfEachMessageAfterAFullDecode(t *testing.T) {
	var got []string
	read := func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
		got = append(got, h.Get(":path")+h.Get(":status")+h.Get("grpc-status")+" "+x.Path())
		return nil
	}
	c, _ := start(t, funcs{reqH: read, respH: read, respT: read})
	s := open(t, c)
	roundTrip(t, s, reqHeaders(false, ":path", "/lazy"))
	withAttrs := respHeaders(false, ":status", "200")
	withAttrs.Attributes = map[string]*structpbStruct{"envoy.filters.http.ext_proc": {}}
	roundTrip(t, s, withAttrs)
	roundTrip(t, s, respTrailers("grpc-status", "0"))
	if want := []string{"/lazy /lazy", "200 /lazy", "0 /lazy"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("headers read %q, want %q", got, want)
	}
}

// x.Metadata is the metadata_context of the latest message that had one,
// whatever a processor did to an earlier one: Codec keeps the empty
// metadata Envoy sends with the request it receives into.
func TestMetadataIsTheLatestMessages(t *testing.T) {
	var got []int
	c, _ := start(t, funcs{
		reqH: func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
			got = append(got, len(x.Metadata.GetFilterMetadata()))
			x.Metadata.FilterMetadata = map[string]*structpbStruct{"written": {}}
			return nil
		},
		respH: func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
			got = append(got, len(x.Metadata.GetFilterMetadata()))
			return nil
		},
	})
	s := open(t, c)
	req := reqHeaders(false, ":path", "/")
	req.MetadataContext = &corev3.Metadata{} // as Envoy sends it
	roundTrip(t, s, req)
	resp := respHeaders(true, ":status", "200")
	resp.MetadataContext = &corev3.Metadata{}
	roundTrip(t, s, resp)
	if want := []int{0, 0}; !slices.Equal(got, want) {
		t.Fatalf("filter metadata namespaces seen %v, want %v", got, want)
	}
}

// TestEveryModeAnswersEachMessageInOrder plays whole exchanges as Envoy
// sends them in each body mode and checks the kind and content of every
// answer, the Content-Length rule and the clean close.
func TestEveryModeAnswersEachMessageInOrder(t *testing.T) {
	upper := func(_ context.Context, _ *sdk.Exchange, b *sdk.Body) error {
		b.Replace([]byte(strings.ToUpper(string(b.Bytes())) + "!"))
		return nil
	}
	p := funcs{reqB: upper, respB: upper,
		reqH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			h.Set("x-seen-path", x.Path())
			return nil
		},
		respH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			h.Set("x-req-path", x.Path()) // request state carried across phases
			return nil
		},
		reqT: func(_ context.Context, _ *sdk.Exchange, t *sdk.Headers) error {
			t.Set("x-req-trailer", "seen")
			return nil
		},
		respT: func(_ context.Context, _ *sdk.Exchange, t *sdk.Headers) error {
			t.Set("x-resp-trailer", t.Get("grpc-status"))
			return nil
		},
	}
	type step struct {
		req      *extprocsvcv3.ProcessingRequest
		kind     string
		body     string // expected replaced body, for body answers
		mutation string // expected header mutation
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"buffered sets content-length", []step{
			{withMode(reqHeaders(false, ":path", "/b", "content-length", "3"), sdk.ModeBuffered, sdk.ModeBuffered), "request_headers", "", "=x-seen-path:/b"},
			{reqBody("abc", true), "request_body", "ABC!", "=content-length:4"},
			{respHeaders(false, ":status", "200", "content-length", "2"), "response_headers", "", "=x-req-path:/b"},
			{respBody("ok", true), "response_body", "OK!", "=content-length:3"},
		}},
		{"buffered without content-length (chunked) sets none", []step{
			{withMode(reqHeaders(false, ":path", "/c"), sdk.ModeBuffered, sdk.ModeNone), "request_headers", "", "=x-seen-path:/c"},
			{reqBody("abc", true), "request_body", "ABC!", ""},
			{respHeaders(true, ":status", "204"), "response_headers", "", "=x-req-path:/c"},
		}},
		{"streamed chunks leave content-length to Envoy", []step{
			{withMode(reqHeaders(false, ":path", "/s", "content-length", "4"), sdk.ModeStreamed, sdk.ModeStreamed), "request_headers", "", "=x-seen-path:/s"},
			{reqBody("ab", false), "request_body", "AB!", ""},
			{reqBody("cd", true), "request_body", "CD!", ""},
			{respHeaders(false, ":status", "200", "content-length", "1"), "response_headers", "", "=x-req-path:/s"},
			{respBody("x", true), "response_body", "X!", ""},
		}},
		{"buffered partial", []step{
			{withMode(reqHeaders(false, ":path", "/p", "content-length", "4"), sdk.ModePartial, sdk.ModeNone), "request_headers", "", "=x-seen-path:/p"},
			{reqBody("abcd", false), "request_body", "ABCD!", ""},
			{reqBody("", true), "request_body", "!", ""},
		}},
		{"unknown mode: a whole first chunk gets content-length", []step{
			{reqHeaders(false, ":path", "/u", "content-length", "1"), "request_headers", "", "=x-seen-path:/u"},
			{reqBody("a", true), "request_body", "A!", "=content-length:2"},
		}},
		{"trailers in both directions", []step{
			{withMode(reqHeaders(false, ":path", "/t"), sdk.ModeStreamed, sdk.ModeNone), "request_headers", "", "=x-seen-path:/t"},
			{reqBody("a", false), "request_body", "A!", ""},
			{reqTrailers("x-checksum", "1"), "request_trailers", "", "=x-req-trailer:seen"},
			{respHeaders(false, ":status", "200", "content-type", "application/grpc"), "response_headers", "", "=x-req-path:/t"},
			{respTrailers("grpc-status", "0"), "response_trailers", "", "=x-resp-trailer:0"},
		}},
		{"headers only", []step{
			{reqHeaders(true, ":path", "/h", ":method", "GET"), "request_headers", "", "=x-seen-path:/h"},
			{respHeaders(true, ":status", "304"), "response_headers", "", "=x-req-path:/h"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := start(t, p)
			s := open(t, c)
			for i, st := range tc.steps {
				resp := roundTrip(t, s, st.req)
				if k := kind(resp); k != st.kind {
					t.Fatalf("answer %d is %s, want %s", i, k, st.kind)
				}
				var m *extprocsvcv3.HeaderMutation
				switch v := resp.GetResponse().(type) {
				case *extprocsvcv3.ProcessingResponse_RequestTrailers:
					m = v.RequestTrailers.GetHeaderMutation()
				case *extprocsvcv3.ProcessingResponse_ResponseTrailers:
					m = v.ResponseTrailers.GetHeaderMutation()
				default:
					m = common(resp).GetHeaderMutation()
					if got := string(common(resp).GetBodyMutation().GetBody()); got != st.body {
						t.Errorf("answer %d body = %q, want %q", i, got, st.body)
					}
				}
				if got := mutationString(m); got != st.mutation {
					t.Errorf("answer %d mutation = %q, want %q", i, got, st.mutation)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			expectEOF(t, s)
			if n := len(rec.get()); n != len(tc.steps) {
				t.Errorf("observer saw %d messages, want %d", n, len(tc.steps))
			}
		})
	}
}

func TestImmediateResponseAtEveryPhase(t *testing.T) {
	deny := func(x *sdk.Exchange) error {
		r := sdk.TextResponse(418, "no "+x.Phase().String())
		r.Headers.Set("X-Why", "teapot")
		r.Details = "denied_" + x.Phase().String()
		x.Respond(r)
		return nil
	}
	at := func(p sdk.Phase) sdk.Processor {
		h := func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
			if x.Phase() == p {
				return deny(x)
			}
			return nil
		}
		b := func(_ context.Context, x *sdk.Exchange, _ *sdk.Body) error {
			if x.Phase() == p {
				return deny(x)
			}
			return nil
		}
		return funcs{reqH: h, respH: h, reqT: h, respT: h, reqB: b, respB: b}
	}
	exchange := []*extprocsvcv3.ProcessingRequest{
		withMode(reqHeaders(false, ":path", "/"), sdk.ModeStreamed, sdk.ModeStreamed),
		reqBody("a", false), reqTrailers("t", "1"),
		respHeaders(false, ":status", "200"), respBody("b", false), respTrailers("t", "2"),
	}
	for i, p := range []sdk.Phase{sdk.RequestHeaders, sdk.RequestBody, sdk.RequestTrailers, sdk.ResponseHeaders, sdk.ResponseBody, sdk.ResponseTrailers} {
		t.Run(p.String(), func(t *testing.T) {
			c, rec := start(t, at(p))
			s := open(t, c)
			for j := 0; j < i; j++ {
				if k := kind(roundTrip(t, s, exchange[j])); k == "immediate" {
					t.Fatalf("message %d answered immediately", j)
				}
			}
			resp := roundTrip(t, s, exchange[i])
			ir := resp.GetImmediateResponse()
			if ir == nil {
				t.Fatalf("answer is %s, want immediate", kind(resp))
			}
			if ir.GetStatus().GetCode() != 418 || string(ir.GetBody()) != "no "+p.String()+"\n" || ir.GetDetails() != "denied_"+p.String() {
				t.Errorf("immediate response = %v", ir)
			}
			if m := mutationString(ir.GetHeaders()); !strings.Contains(m, "=x-why:teapot") || !strings.Contains(m, "=content-type:text/plain") {
				t.Errorf("immediate headers = %q", m)
			}
			expectEOF(t, s) // the driver closes the stream after an immediate response
			ev := rec.get()
			if last := ev[len(ev)-1]; last != (event{p, sdk.OutcomeImmediate}) {
				t.Errorf("last observed event = %+v", last)
			}
		})
	}
}

func TestRouteCacheMetadataAndModeOverride(t *testing.T) {
	var bodyErr error
	p := funcs{
		reqH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			h.Set("x-variant", "canary")
			x.ClearRouteCache()
			if err := x.SetMetadata("portcullis", "variant", "canary"); err != nil {
				return err
			}
			if err := x.SetMetadata("portcullis", "bad", make(chan int)); err == nil {
				t.Error("SetMetadata accepted a channel")
			}
			return x.OverrideMode(&extprocv3.ProcessingMode{RequestBodyMode: sdk.ModeBuffered, ResponseHeaderMode: extprocv3.ProcessingMode_SKIP})
		},
		reqB: func(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
			if b.Mode != sdk.ModeBuffered {
				t.Errorf("body mode after override = %v", b.Mode)
			}
			bodyErr = x.OverrideMode(&extprocv3.ProcessingMode{})
			x.ClearRouteCache()
			return nil
		},
		respH: func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
			x.ClearRouteCache() // ignored on responses
			return nil
		},
	}
	c, _ := start(t, p)
	s := open(t, c)
	resp := roundTrip(t, s, withMode(reqHeaders(false, ":path", "/"), sdk.ModeNone, sdk.ModeNone))
	if !common(resp).GetClearRouteCache() {
		t.Error("clear_route_cache not set")
	}
	if got := resp.GetDynamicMetadata().GetFields()["portcullis"].GetStructValue().GetFields()["variant"].GetStringValue(); got != "canary" {
		t.Errorf("dynamic metadata = %v", resp.GetDynamicMetadata())
	}
	if mo := resp.GetModeOverride(); mo.GetRequestBodyMode() != sdk.ModeBuffered || mo.GetResponseHeaderMode() != extprocv3.ProcessingMode_SKIP {
		t.Errorf("mode_override = %v", mo)
	}
	resp = roundTrip(t, s, reqBody("x", true))
	if !errors.Is(bodyErr, sdk.ErrModeOverridePhase) || resp.GetModeOverride() != nil {
		t.Errorf("override in body phase: err %v, sent %v", bodyErr, resp.GetModeOverride())
	}
	if !common(resp).GetClearRouteCache() {
		t.Error("clear_route_cache on a request body not set")
	}
	resp = roundTrip(t, s, respHeaders(true, ":status", "200"))
	if common(resp).GetClearRouteCache() || resp.GetDynamicMetadata() != nil {
		t.Errorf("response headers answer carries request-only actions: %v", resp)
	}
}

func TestChainRunsInOrderAndStopsAtRespond(t *testing.T) {
	var ran []string
	step := func(name string, respond bool) sdk.Processor {
		return funcs{reqH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			ran = append(ran, name+"("+h.Get("x-order")+")")
			h.Set("x-order", h.Get("x-order")+name)
			if respond {
				x.Respond(sdk.TextResponse(403, "stop"))
			}
			return nil
		}}
	}
	c, _ := start(t, sdk.Chain(step("a", false), step("b", true), step("c", false)))
	resp := roundTrip(t, open(t, c), reqHeaders(true, ":path", "/"))
	if resp.GetImmediateResponse().GetStatus().GetCode() != 403 {
		t.Errorf("answer = %v", resp)
	}
	if got := strings.Join(ran, " "); got != "a() b(a)" {
		t.Errorf("ran %q, want a() b(a)", got)
	}
}

func TestErrorsBecomeStatusCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		proc sdk.Processor
		req  *extprocsvcv3.ProcessingRequest
		want codes.Code
	}{
		{"plain error", funcs{reqH: func(context.Context, *sdk.Exchange, *sdk.Headers) error { return errors.New("boom") }}, reqHeaders(true), codes.Internal},
		{"status error keeps its code", funcs{reqH: func(context.Context, *sdk.Exchange, *sdk.Headers) error {
			return sdk.Errorf(codes.PermissionDenied, "no")
		}}, reqHeaders(true), codes.PermissionDenied},
		{"deadline", funcs{reqB: func(context.Context, *sdk.Exchange, *sdk.Body) error { return context.DeadlineExceeded }}, reqBody("x", true), codes.DeadlineExceeded},
		{"panic", funcs{respH: func(context.Context, *sdk.Exchange, *sdk.Headers) error { panic("bug") }}, respHeaders(true), codes.Internal},
		{"empty message", funcs{}, &extprocsvcv3.ProcessingRequest{}, codes.InvalidArgument},
		{"grpc body mode", funcs{}, withMode(reqHeaders(false), sdk.ModeGRPC, sdk.ModeNone), codes.Unimplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := start(t, tc.proc)
			s := open(t, c)
			if err := s.Send(tc.req); err != nil {
				t.Fatal(err)
			}
			_, err := s.Recv()
			if status.Code(err) != tc.want {
				t.Fatalf("Recv: %v, want code %v", err, tc.want)
			}
			if ev := rec.get(); len(ev) != 1 || ev[0].outcome != sdk.OutcomeError {
				t.Errorf("observed %+v", ev)
			}
		})
	}
}

// TestCancellationReachesTheProcessor: Envoy going away (stream reset)
// cancels the context a blocked processor waits on.
func TestCancellationReachesTheProcessor(t *testing.T) {
	entered, cancelled := make(chan struct{}), make(chan error, 1)
	c, rec := start(t, funcs{reqH: func(ctx context.Context, _ *sdk.Exchange, _ *sdk.Headers) error {
		close(entered)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(reqHeaders(true, ":path", "/slow")); err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("processor saw %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the processor was not cancelled")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.get()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if ev := rec.get(); len(ev) != 1 || ev[0] != (event{sdk.RequestHeaders, sdk.OutcomeError}) {
		t.Errorf("observed %+v", ev)
	}
}

func TestObservabilityModeSendsNothing(t *testing.T) {
	c, rec := start(t, funcs{})
	s := open(t, c)
	for _, r := range []*extprocsvcv3.ProcessingRequest{reqHeaders(true, ":path", "/"), respHeaders(true, ":status", "200")} {
		r.ObservabilityMode = true
		if err := s.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, s) // no answers in between
	if n := len(rec.get()); n != 2 {
		t.Errorf("processed %d messages, want 2", n)
	}
}

func TestExchangeState(t *testing.T) {
	type key struct{}
	var got []string
	c, _ := start(t, funcs{
		reqH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			x.SetValue(key{}, "from-request")
			h.Set(":path", "/rewritten")
			got = append(got, x.Method(), x.Authority(), x.RequestID(), h.Get("X-Mixed"))
			for k, v := range h.All() {
				if k == "x-two" {
					got = append(got, v)
				}
			}
			return nil
		},
		respH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			got = append(got, x.Value(key{}).(string), x.Path(), x.Response(":status"), x.Attributes["envoy.filters.http.ext_proc"].GetFields()["request.path"].GetStringValue())
			return nil
		},
	})
	s := open(t, c)
	roundTrip(t, s, reqHeaders(true, ":method", "POST", ":authority", "a.example", "x-request-id", "rid-1", "x-mixed", "M", "x-two", "1", "x-two", "2"))
	r := respHeaders(true, ":status", "201")
	r.Attributes = map[string]*structpbStruct{"envoy.filters.http.ext_proc": mustStruct(t, map[string]any{"request.path": "/orig"})}
	roundTrip(t, s, r)
	if want := "POST a.example rid-1 M 1 2 from-request /rewritten 201 /orig"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

// TestConcurrentStreamsKeepTheirOwnExchange: Envoy multiplexes many
// streams on one connection; each must see only its own request state.
func TestConcurrentStreamsKeepTheirOwnExchange(t *testing.T) {
	c, _ := start(t, funcs{
		reqH: func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
			x.SetValue("path", x.Path())
			return nil
		},
		respH: func(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
			h.Set("x-path", x.Value("path").(string))
			return nil
		},
	})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 64 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := c.Process(ctx) // not open(): t.Fatal is for the test goroutine
			if err != nil {
				errs <- err.Error()
				return
			}
			path := "/p/" + strings.Repeat("x", i)
			if err := s.Send(reqHeaders(true, ":path", path)); err != nil {
				errs <- err.Error()
				return
			}
			if _, err := s.Recv(); err != nil {
				errs <- err.Error()
				return
			}
			if err := s.Send(respHeaders(true, ":status", "200")); err != nil {
				errs <- err.Error()
				return
			}
			resp, err := s.Recv()
			if err != nil {
				errs <- err.Error()
				return
			}
			if got := mutationString(common(resp).GetHeaderMutation()); got != "=x-path:"+path {
				errs <- "stream " + path + " got " + got
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
