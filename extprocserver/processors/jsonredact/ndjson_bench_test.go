package jsonredact

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// BenchmarkNDJSONChunks streams 1 MiB of 128-byte NDJSON lines, each with
// a password to redact, in 16 KiB FULL_DUPLEX_STREAMED chunks through the
// driver (in-process gRPC): the server side of bench/extproc's case 5b.
func BenchmarkNDJSONChunks(b *testing.B) {
	p, err := NewNDJSON(NDJSONConfig{Config: Config{Request: []string{"$.password"}}})
	if err != nil {
		b.Fatal(err)
	}
	var body bytes.Buffer
	for i := 0; body.Len() < 1<<20; i++ {
		head := fmt.Sprintf(`{"n":%d,"password":"hunter2","pad":"`, i)
		body.WriteString(head + strings.Repeat("x", 128-len(head)-3) + "\"}\n")
	}
	data := string(body.Bytes()[:1<<20])
	c := sdktest.Serve(b, p)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s := sdktest.Open(b, c)
		s.RoundTrip(sdktest.WithModes(sdktest.RequestHeaders(false, ":path", "/", "content-type", "application/x-ndjson"), sdk.ModeFullDuplex, sdk.ModeNone))
		for off := 0; off < len(data); off += 16 << 10 {
			s.RoundTrip(sdktest.RequestBody(data[off:off+16<<10], off+16<<10 >= len(data)))
		}
	}
}
