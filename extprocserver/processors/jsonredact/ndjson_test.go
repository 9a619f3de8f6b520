package jsonredact

import (
	"strings"
	"testing"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

func TestRedactLines(t *testing.T) {
	p, err := New(Config{Request: []string{"$.password"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"lines", "{\"password\":\"a\"}\n{\"user\":\"u\"}\n{\"password\":\"b\"}\n", "{\"password\":\"[REDACTED]\"}\n{\"user\":\"u\"}\n{\"password\":\"[REDACTED]\"}\n"},
		{"no final newline", "{\"u\":1}\n{\"password\":\"b\"}", "{\"u\":1}\n{\"password\":\"[REDACTED]\"}"},
		{"CRLF kept", "{\"password\":\"a\"}\r\n{\"u\":1}\r\n", "{\"password\":\"[REDACTED]\"}\r\n{\"u\":1}\r\n"},
		{"invalid and empty lines pass", "not json\n\n{\"password\":1}\n{bad\n", "not json\n\n{\"password\":\"[REDACTED]\"}\n{bad\n"},
		{"nothing to do", "{\"u\":1}\n", "{\"u\":1}\n"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := p.redactLines([]byte(tc.in), p.req)
			if string(got) != tc.want || changed != (tc.in != tc.want) {
				t.Errorf("got %q (changed %v), want %q", got, changed, tc.want)
			}
		})
	}
}

// exchange plays one request through p with Envoy's body mode mode and
// content type ct: body chunks, then trailers when trailers is set. It
// returns the body Envoy would forward (the concatenated answers), each
// streamed chunk, and the status of an immediate response (0 if none).
func exchange(t *testing.T, p sdk.Processor, mode sdk.BodyMode, ct string, chunks []string, trailers bool) (body string, sent []string, immediate int) {
	t.Helper()
	s := sdktest.Open(t, sdktest.Serve(t, p))
	s.RoundTrip(sdktest.WithModes(sdktest.RequestHeaders(false, ":path", "/", "content-type", ct), mode, sdk.ModeNone))
	recv := func() *extprocsvcv3.ProcessingResponse {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if ir := r.GetImmediateResponse(); ir != nil {
			immediate = int(ir.GetStatus().GetCode())
		}
		if sr := sdktest.Common(r).GetBodyMutation().GetStreamedResponse(); sr != nil {
			sent = append(sent, string(sr.GetBody()))
			body += string(sr.GetBody())
		}
		return r
	}
	for i, c := range chunks {
		eos := i == len(chunks)-1 && !trailers
		if err := s.Send(sdktest.RequestBody(c, eos)); err != nil {
			t.Fatal(err)
		}
		r := recv()
		if immediate != 0 {
			return body, sent, immediate
		}
		if mode != sdk.ModeFullDuplex { // the chunk, or what replaced it
			if bm := sdktest.Common(r).GetBodyMutation(); bm != nil {
				c = string(bm.GetBody())
			}
			body += c
		}
	}
	if trailers {
		if err := s.Send(sdktest.RequestTrailers("x-t", "1")); err != nil {
			t.Fatal(err)
		}
		for immediate == 0 && recv().GetRequestTrailers() == nil {
		}
	}
	return body, sent, immediate
}

const (
	ndjsonIn = `{"user":"a","password":"hunter2"}
{"user":"b","card":{"number":"4111111111111111"}}
not json, kept
{"user":"c","password":"correct horse"}
`
	ndjsonOut = `{"user":"a","password":"[REDACTED]"}
{"user":"b","card":{"number":"[REDACTED]"}}
not json, kept
{"user":"c","password":"[REDACTED]"}
`
)

var secrets = []string{"hunter2", "4111111111111111", "correct horse"}

func ndjsonProcessor(t *testing.T, maxLine int) *NDJSONProcessor {
	t.Helper()
	p, err := NewNDJSON(NDJSONConfig{Config: Config{Request: []string{"$.password", "$.card.number"}}, MaxLineBytes: maxLine})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNDJSONStreamsLineByLine splits the body at every byte (two chunks)
// and at every pair of line-crossing points (three chunks), ending with
// end_of_stream or with trailers: the forwarded body is always the
// redacted one, and no chunk Envoy forwards carries a secret or a part of
// one.
func TestNDJSONStreamsLineByLine(t *testing.T) {
	p := ndjsonProcessor(t, 0)
	var splits [][]string
	for i := 0; i <= len(ndjsonIn); i++ {
		splits = append(splits, []string{ndjsonIn[:i], ndjsonIn[i:]})
	}
	for i := 1; i < len(ndjsonIn); i += 7 {
		for j := i; j < len(ndjsonIn); j += 11 {
			splits = append(splits, []string{ndjsonIn[:i], ndjsonIn[i:j], ndjsonIn[j:]})
		}
	}
	// The last line without its newline, ended by end_of_stream or trailers.
	noNL := strings.TrimSuffix(ndjsonIn, "\n")
	splits = append(splits, []string{noNL[:20], noNL[20:]})
	for _, chunks := range splits {
		for _, trailers := range []bool{false, true} {
			body, sent, imm := exchange(t, p, sdk.ModeFullDuplex, "application/x-ndjson", chunks, trailers)
			want := ndjsonOut
			if strings.Join(chunks, "") == noNL {
				want = strings.TrimSuffix(ndjsonOut, "\n")
			}
			if imm != 0 || body != want {
				t.Fatalf("chunks %q, trailers %v: forwarded %q (immediate %d), want %q", chunks, trailers, body, imm, want)
			}
			for _, c := range sent {
				for _, sec := range secrets {
					if strings.Contains(c, sec[:4]) {
						t.Fatalf("chunks %q: forwarded chunk %q carries part of %q", chunks, c, sec)
					}
				}
			}
		}
	}
}

func TestNDJSON(t *testing.T) {
	long := `{"password":"` + strings.Repeat("x", 100) + `"}` + "\n"
	for _, tc := range []struct {
		name      string
		maxLine   int
		mode      sdk.BodyMode
		ct        string
		chunks    []string
		trailers  bool
		want      string
		immediate int
	}{
		{"jsonl content type", 0, sdk.ModeFullDuplex, "application/jsonl; charset=utf-8", []string{ndjsonIn}, false, ndjsonOut, 0},
		{"missing content type", 0, sdk.ModeFullDuplex, "", []string{ndjsonIn[:9], ndjsonIn[9:]}, false, ndjsonOut, 0},
		{"other content type passes", 0, sdk.ModeFullDuplex, "text/plain", []string{ndjsonIn[:9], ndjsonIn[9:]}, false, ndjsonIn, 0},
		{"whole buffered body", 0, sdk.ModeBuffered, "application/x-ndjson", []string{ndjsonIn}, false, ndjsonOut, 0},
		{"streamed chunks pass (no hold-back)", 0, sdk.ModeStreamed, "application/x-ndjson", []string{ndjsonIn[:9], ndjsonIn[9:]}, false, ndjsonIn, 0},
		{"line within the limit", len(long), sdk.ModeFullDuplex, "", []string{long[:50], long[50:]}, false, `{"password":"[REDACTED]"}` + "\n", 0},
		{"line over the limit fails closed", 50, sdk.ModeFullDuplex, "", []string{long[:40], long[40:80], long[80:]}, false, "", 413},
		{"limit applies to the held line only", 50, sdk.ModeFullDuplex, "", []string{long + long}, false, `{"password":"[REDACTED]"}` + "\n" + `{"password":"[REDACTED]"}` + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _, imm := exchange(t, ndjsonProcessor(t, tc.maxLine), tc.mode, tc.ct, tc.chunks, tc.trailers)
			if imm != tc.immediate || (imm == 0 && body != tc.want) {
				t.Errorf("forwarded %q (immediate %d), want %q (immediate %d)", body, imm, tc.want, tc.immediate)
			}
		})
	}
}

func TestNDJSONConfig(t *testing.T) {
	if _, err := NewNDJSON(NDJSONConfig{Config: Config{Request: []string{"$.a"}}, MaxLineBytes: -1}); err == nil || !strings.Contains(err.Error(), "maxLineBytes") {
		t.Errorf("negative maxLineBytes: %v", err)
	}
	if _, err := NewNDJSON(NDJSONConfig{}); err == nil {
		t.Error("no paths accepted")
	}
}
