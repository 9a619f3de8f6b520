package sdk_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// describeDuplex renders an answer compactly: "body:<data>" or
// "body:<data>|eos" for a streamed body chunk (long data as "<n bytes>"),
// "trailers <mutation>", "headers <mutation>", "immediate:<status>"; a
// body answer that is not streamed is "NOT STREAMED".
func describeDuplex(r *extprocsvcv3.ProcessingResponse) string {
	if ir := r.GetImmediateResponse(); ir != nil {
		return fmt.Sprintf("immediate:%d", ir.GetStatus().GetCode())
	}
	switch k := kind(r); k {
	case "request_body", "response_body":
		c := common(r)
		sr := c.GetBodyMutation().GetStreamedResponse()
		if sr == nil || c.GetHeaderMutation() != nil || c.GetClearRouteCache() {
			return "NOT STREAMED " + r.String()
		}
		out := "body:" + string(sr.GetBody())
		if len(sr.GetBody()) > 64 {
			out = fmt.Sprintf("body:<%d bytes>", len(sr.GetBody()))
		}
		if sr.GetEndOfStream() {
			out += "|eos"
		}
		if r.GetDynamicMetadata() != nil {
			out += "|metadata"
		}
		return out
	case "request_trailers", "response_trailers":
		return strings.TrimSpace("trailers " + mutationString(trailersMutation(r)))
	default:
		return strings.TrimSpace(strings.TrimSuffix(k, "_headers") + " " + mutationString(common(r).GetHeaderMutation()))
	}
}

func trailersMutation(r *extprocsvcv3.ProcessingResponse) *extprocsvcv3.HeaderMutation {
	if t := r.GetRequestTrailers(); t != nil {
		return t.GetHeaderMutation()
	}
	return r.GetResponseTrailers().GetHeaderMutation()
}

type heldKey struct{}

// holdAll holds every chunk back and emits the body upper-cased on the Last
// call, recording what each call saw.
func holdAll(seen *[]string) func(context.Context, *sdk.Exchange, *sdk.Body) error {
	return func(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
		*seen = append(*seen, fmt.Sprintf("%d:%s eos=%v last=%v", b.Chunk, b.Bytes(), b.EndOfStream, b.Last))
		held, _ := x.Value(heldKey{}).([]byte)
		held = append(held, b.Bytes()...)
		if !b.Last {
			x.SetValue(heldKey{}, held)
			b.Replace(nil)
			return nil
		}
		b.Replace(bytes.ToUpper(held))
		return nil
	}
}

// TestFullDuplexStreamed plays FULL_DUPLEX_STREAMED exchanges: each request
// Envoy sends lists the answers it gets, in order (zero or more).
func TestFullDuplexStreamed(t *testing.T) {
	type step struct {
		req  *extprocsvcv3.ProcessingRequest
		want []string
	}
	duplex := func(r *extprocsvcv3.ProcessingRequest) *extprocsvcv3.ProcessingRequest {
		return withMode(r, sdk.ModeFullDuplex, sdk.ModeFullDuplex)
	}
	upper := func(_ context.Context, _ *sdk.Exchange, b *sdk.Body) error {
		b.Replace(bytes.ToUpper(b.Bytes()))
		return nil
	}
	var seen []string
	big := strings.Repeat("a", 2*sdk.MaxStreamedChunk+100)
	for _, tc := range []struct {
		name     string
		proc     funcs
		steps    []step
		wantSeen []string // what holdAll saw, when used
	}{
		{"chunks pass through unchanged", funcs{}, []step{
			{duplex(reqHeaders(false, ":path", "/", "content-length", "3")), []string{"request"}},
			{reqBody("ab", false), []string{"body:ab"}},
			{reqBody("c", true), []string{"body:c|eos"}},
			{respHeaders(false, ":status", "200"), []string{"response"}},
			{respBody("xyz", true), []string{"body:xyz|eos"}},
		}, nil},
		{"each chunk replaced, no content-length", funcs{reqB: upper, respB: upper}, []step{
			{duplex(reqHeaders(false, ":path", "/", "content-length", "3")), []string{"request"}},
			{reqBody("ab", false), []string{"body:AB"}},
			{reqBody("c", true), []string{"body:C|eos"}},
			{respHeaders(false, ":status", "200", "content-length", "2"), []string{"response"}},
			{respBody("ok", true), []string{"body:OK|eos"}},
		}, nil},
		{"held back and emitted at end of stream", funcs{reqB: holdAll(&seen)}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("ab", false), []string{"body:"}},
			{reqBody("cd", false), []string{"body:"}},
			{reqBody("e", true), []string{"body:ABCDE|eos"}},
		}, []string{"1:ab eos=false last=false", "2:cd eos=false last=false", "3:e eos=true last=true"}},
		{"trailers end the body: Last call, its output before the trailers answer", funcs{reqB: holdAll(&seen)}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("ab", false), []string{"body:"}},
			{reqBody("c", false), []string{"body:"}},
			{reqTrailers("x-checksum", "1"), []string{"body:ABC", "trailers"}},
		}, []string{"1:ab eos=false last=false", "2:c eos=false last=false", "3: eos=false last=true"}},
		{"trailers with nothing held: no extra body answer", funcs{}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("ab", false), []string{"body:ab"}},
			{reqTrailers("x-t", "1"), []string{"trailers"}},
		}, nil},
		{"response trailers", funcs{respB: holdAll(&seen), respT: func(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error {
			h.Set("x-done", "1")
			return nil
		}}, []step{
			{duplex(reqHeaders(true, ":path", "/")), []string{"request"}},
			{respHeaders(false, ":status", "200"), []string{"response"}},
			{respBody("ok", false), []string{"body:"}},
			{respTrailers("grpc-status", "0"), []string{"body:OK", "trailers =x-done:1"}},
		}, []string{"1:ok eos=false last=false", "2: eos=false last=true"}},
		{"trailers without a body: no Last call", funcs{reqB: holdAll(&seen)}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqTrailers("x-t", "1"), []string{"trailers"}},
		}, []string{}},
		{"no Last call after end of stream", funcs{reqB: holdAll(&seen)}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("a", true), []string{"body:A|eos"}},
			{respHeaders(false, ":status", "200"), []string{"response"}},
		}, []string{"1:a eos=true last=true"}},
		{"large output split into chunks", funcs{reqB: func(_ context.Context, _ *sdk.Exchange, b *sdk.Body) error {
			b.Replace([]byte(big))
			return nil
		}}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("x", true), []string{"body:<65536 bytes>", "body:<65536 bytes>", "body:<100 bytes>|eos"}},
		}, nil},
		{"metadata on the last chunk", funcs{reqB: func(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
			return x.SetMetadata("ns", "k", "v")
		}}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("x", false), []string{"body:x|metadata"}},
		}, nil},
		{"immediate response in a body message", funcs{reqB: func(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
			if b.Chunk == 2 {
				x.Respond(sdk.TextResponse(413, "too much"))
			}
			return nil
		}}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("a", false), []string{"body:a"}},
			{reqBody("b", false), []string{"immediate:413"}},
		}, nil},
		{"immediate response on the Last call", funcs{reqB: func(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
			if b.Last {
				x.Respond(sdk.TextResponse(400, "bad"))
			}
			return nil
		}}, []step{
			{duplex(reqHeaders(false, ":path", "/")), []string{"request"}},
			{reqBody("a", false), []string{"body:a"}},
			{reqTrailers("x-t", "1"), []string{"immediate:400"}},
		}, nil},
		{"only the direction in full duplex streams", funcs{reqB: upper, respB: upper}, []step{
			{withMode(reqHeaders(false, ":path", "/", "content-length", "2"), sdk.ModeBuffered, sdk.ModeFullDuplex), []string{"request"}},
			{reqBody("ab", true), []string{"NOT STREAMED"}},
			{respHeaders(false, ":status", "200"), []string{"response"}},
			{respBody("ok", true), []string{"body:OK|eos"}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			c, _ := start(t, tc.proc)
			s := open(t, c)
			for i, st := range tc.steps {
				if err := s.Send(st.req); err != nil {
					t.Fatal(err)
				}
				for j, want := range st.want {
					r, err := s.Recv()
					if err != nil {
						t.Fatalf("step %d answer %d: %v, want %q", i, j, err, want)
					}
					if got := describeDuplex(r); got != want && (want != "NOT STREAMED" || !strings.HasPrefix(got, want)) {
						t.Fatalf("step %d answer %d: %.200s, want %q", i, j, got, want)
					}
				}
			}
			// Nothing more was sent: closing our side ends the stream
			// cleanly (an immediate response already closed it).
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Recv(); err == nil {
				t.Fatalf("unexpected answer %.200s", describeDuplex(r))
			}
			if tc.wantSeen != nil && strings.Join(seen, "; ") != strings.Join(tc.wantSeen, "; ") {
				t.Errorf("processor saw\n  %s\nwant\n  %s", strings.Join(seen, "; "), strings.Join(tc.wantSeen, "; "))
			}
		})
	}
}

// TestFullDuplexModeOverrideRefused: Envoy does not switch into or out of
// FULL_DUPLEX_STREAMED per request, so the SDK refuses to ask.
func TestFullDuplexModeOverrideRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req, resp sdk.BodyMode
		override  *extprocv3.ProcessingMode
	}{
		{"to full duplex", sdk.ModeNone, sdk.ModeNone, &extprocv3.ProcessingMode{RequestBodyMode: sdk.ModeFullDuplex}},
		{"to grpc", sdk.ModeNone, sdk.ModeNone, &extprocv3.ProcessingMode{ResponseBodyMode: sdk.ModeGRPC}},
		{"from full duplex", sdk.ModeFullDuplex, sdk.ModeNone, &extprocv3.ProcessingMode{RequestBodyMode: sdk.ModeBuffered}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			c, _ := start(t, funcs{reqH: func(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
				err = x.OverrideMode(tc.override)
				return nil
			}})
			resp := roundTrip(t, open(t, c), withMode(reqHeaders(false, ":path", "/"), tc.req, tc.resp))
			if err != sdk.ErrModeOverrideDuplex || resp.GetModeOverride() != nil {
				t.Errorf("OverrideMode: %v, sent %v; want ErrModeOverrideDuplex and nothing sent", err, resp.GetModeOverride())
			}
		})
	}
}
