package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

// FULL_DUPLEX_STREAMED through the real Envoy: ndjsonRedact redacts NDJSON
// bodies as they stream, in both directions, with trailers, and fails
// closed mid-stream; the server's memory stays bounded while bodies far
// larger than what it may hold pass through.

// duplexMaxLine is ndjsonRedact's maxLineBytes here: the most the server
// may hold of a body.
const duplexMaxLine = 64 << 10

const duplexConfig = `
processors:
- ndjsonRedact:
    request: ["$.password"]
    response: ["$..token"]
    maxLineBytes: 65536
`

// Secrets the upstream and the client must never see.
const (
	requestSecret  = "hunter2"
	responseSecret = "s3cr3t"
)

// duplexLineLen is the length of every generated line, newline included.
const duplexLineLen = 128

// ndjsonLine is line n of a generated body: exactly duplexLineLen bytes
// with a secret in field (password or token).
func ndjsonLine(n int, field, secret string) []byte {
	head := fmt.Sprintf(`{"n":%d,"%s":"%s-%d","pad":"`, n, field, secret, n)
	return []byte(head + strings.Repeat("x", duplexLineLen-len(head)-3) + "\"}\n")
}

// longLine is a line longer than duplexMaxLine, its secret first, so that
// any part of it forwarded would carry the secret.
func longLine(n int, field, secret string) []byte {
	return []byte(fmt.Sprintf(`{"%s":"%s-long","n":%d,"pad":"%s"}`+"\n", field, secret, n, strings.Repeat("y", 2*duplexMaxLine)))
}

// ndjsonReader generates lines [0, lines) on demand (line longAt, if >= 0,
// is a long one) so that a 64 MiB body is never in memory.
type ndjsonReader struct {
	next, lines, longAt int
	buf                 []byte
}

func (r *ndjsonReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.next >= r.lines {
			return 0, io.EOF
		}
		if r.next == r.longAt {
			r.buf = longLine(r.next, "password", requestSecret)
		} else {
			r.buf = ndjsonLine(r.next, "password", requestSecret)
		}
		r.next++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// ingestResult is what the upstream saw of a request body.
type ingestResult struct {
	Lines    int    `json:"lines"`    // complete or final lines
	Bytes    int64  `json:"bytes"`    // body bytes
	Redacted int    `json:"redacted"` // lines whose password is [REDACTED]
	Bad      string `json:"bad"`      // first line out of order or not redacted
	Trailer  string `json:"trailer"`  // X-Checksum request trailer
	ReadErr  string `json:"readErr"`
}

// duplexUpstream is the upstream (HTTP/1.1 and h2c): POST /ingest reads an
// NDJSON body line by line and answers what it saw; GET /stream streams
// NDJSON lines with tokens. Anything carrying a secret that reaches it is
// counted.
type duplexUpstream struct {
	addr    string
	secrets atomic.Int64      // request lines with requestSecret that arrived
	ingests chan ingestResult // every /ingest, also those Envoy aborted
	streams chan error        // how each /stream ended
}

func startDuplexUpstream(t *testing.T) *duplexUpstream {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &duplexUpstream{addr: l.Addr().String(), ingests: make(chan ingestResult, 16), streams: make(chan error, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ingest", u.ingest)
	mux.HandleFunc("GET /stream", u.stream)
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l) }() // returns when the cleanup closes it
	t.Cleanup(func() { srv.Close() })
	return u
}

func (u *duplexUpstream) ingest(w http.ResponseWriter, r *http.Request) {
	var res ingestResult
	rd := bufio.NewReaderSize(r.Body, 256<<10)
	for {
		line, err := rd.ReadBytes('\n')
		res.Bytes += int64(len(line))
		if bytes.Contains(line, []byte(requestSecret)) {
			u.secrets.Add(1)
		}
		// A reset can cut the last line short (HTTP/2 splits a line
		// across frames): that fragment is no line of its own, but a
		// secret in it is still counted above.
		truncated := err != nil && !errors.Is(err, io.EOF) && !bytes.HasSuffix(line, []byte("\n"))
		if len(line) > 0 && !truncated {
			var v struct {
				N        int    `json:"n"`
				Password string `json:"password"`
			}
			switch {
			case json.Unmarshal(line, &v) != nil || v.N != res.Lines:
				if res.Bad == "" {
					res.Bad = fmt.Sprintf("line %d: %.80q", res.Lines, line)
				}
			case v.Password == "[REDACTED]":
				res.Redacted++
			}
			res.Lines++
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				res.ReadErr = err.Error()
			}
			break
		}
	}
	res.Trailer = r.Trailer.Get("X-Checksum")
	u.ingests <- res
	w.Header().Set("Content-Type", "application/json")
	// The test reads res from u.ingests; a client that went away reads no answer.
	_ = json.NewEncoder(w).Encode(res)
}

// stream writes ?lines= lines, line ?longAt= a long one; with ?trailer=1
// the last line has no newline and an X-Lines trailer follows.
func (u *duplexUpstream) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lines, _ := strconv.Atoi(q.Get("lines"))
	longAt := -1
	if s := q.Get("longAt"); s != "" {
		longAt, _ = strconv.Atoi(s)
	}
	trailer := q.Get("trailer") == "1"
	w.Header().Set("Content-Type", "application/x-ndjson")
	if trailer {
		w.Header().Set("Trailer", "X-Lines")
	}
	rc := http.NewResponseController(w)
	var err error
	pending := 0
	for n := 0; n < lines && err == nil; n++ {
		line := ndjsonLine(n, "token", responseSecret)
		if n == longAt {
			line = longLine(n, "token", responseSecret)
		}
		if trailer && n == lines-1 {
			line = bytes.TrimSuffix(line, []byte("\n"))
		}
		_, err = w.Write(line)
		if pending += len(line); pending >= 32<<10 && err == nil {
			err, pending = rc.Flush(), 0
		}
	}
	if trailer {
		w.Header().Set("X-Lines", strconv.Itoa(lines))
	}
	u.streams <- err
}

// h2cClient speaks HTTP/2 with prior knowledge to Envoy at addr: trailers
// reach Envoy, and an early answer does not depend on the request body
// being written to the end.
func h2cClient(addr string) *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		Protocols: p,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// procMemory reads VmRSS and VmHWM (peak RSS) of pid, in bytes.
func procMemory(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading memory of pid %d: %v", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	if rss == 0 || hwm == 0 {
		t.Fatalf("no VmRSS/VmHWM in /proc/%d/status", pid)
	}
	return rss, hwm
}

// readNDJSON reads a streamed response body line by line, checking that
// lines come in order with the token redacted; it returns the number of
// lines, the first problem, the read error and whether the secret arrived.
func readNDJSON(body io.Reader) (lines int, bad string, readErr error, secret bool) {
	rd := bufio.NewReaderSize(body, 256<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if bytes.Contains(line, []byte(responseSecret)) {
			secret = true
		}
		// A reset can cut the last line short (HTTP/2 splits a line
		// across frames): that fragment is no line of its own, but a
		// secret in it is still a leak (checked above).
		truncated := err != nil && !errors.Is(err, io.EOF) && !bytes.HasSuffix(line, []byte("\n"))
		if len(line) > 0 && !truncated {
			var v struct {
				N     int    `json:"n"`
				Token string `json:"token"`
			}
			if (json.Unmarshal(line, &v) != nil || v.N != lines || v.Token != "[REDACTED]") && bad == "" {
				bad = fmt.Sprintf("line %d: %.80q", lines, line)
			}
			lines++
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return lines, bad, err, secret
		}
	}
}

func TestExtProcFullDuplexStreamed(t *testing.T) {
	t.Parallel()
	up := startDuplexUpstream(t)
	eps := harness.StartExtProcServer(t, duplexConfig)
	addr := harness.FreeAddr(t)
	harness.StartEnvoy(t, harness.WriteStaticBootstrap(t, []harness.StaticListener{{
		Name: "duplex", Addr: addr,
		HTTPFilters: []map[string]any{harness.ExtProcFilter("extproc", map[string]any{
			// The filter refuses FULL_DUPLEX_STREAMED without trailers SEND.
			"processing_mode": map[string]any{
				"request_header_mode": "SEND", "response_header_mode": "SEND",
				"request_body_mode": "FULL_DUPLEX_STREAMED", "response_body_mode": "FULL_DUPLEX_STREAMED",
				"request_trailer_mode": "SEND", "response_trailer_mode": "SEND",
			},
			"message_timeout": "10s",
		})},
		Routes: []map[string]any{{"match": map[string]any{"prefix": "/"}, "route": map[string]any{"cluster": "upstream", "timeout": "120s"}}},
	}}, []harness.StaticCluster{
		{Name: "extproc", Addr: eps.Addr, HTTP2: true},
		{Name: "upstream", Addr: up.addr, HTTP2: true},
	}))
	client := h2cClient(addr)

	post := func(t *testing.T, body io.Reader, size int64, trailer http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest("POST", "http://app.example/ingest", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength, req.Trailer = size, trailer
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST /ingest: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST /ingest: reading the answer: %v", err)
		}
		return resp, b
	}
	ingested := func(t *testing.T) ingestResult {
		t.Helper()
		select {
		case r := <-up.ingests:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the upstream never finished reading the request")
		}
		return ingestResult{}
	}
	get := func(t *testing.T, query string) *http.Response {
		t.Helper()
		resp, err := client.Get("http://app.example/stream?" + query)
		if err != nil {
			t.Fatalf("GET /stream?%s: %v", query, err)
		}
		return resp
	}

	// Checked last: no secret reached the upstream in any subtest.
	t.Cleanup(func() {
		if n := up.secrets.Load(); n != 0 {
			t.Errorf("%d request lines with the secret reached the upstream", n)
		}
	})

	t.Run("request trailers end the body: the held last line goes first", func(t *testing.T) {
		body := string(ndjsonLine(0, "password", requestSecret)) + strings.TrimSuffix(string(ndjsonLine(1, "password", requestSecret)), "\n")
		resp, _ := post(t, strings.NewReader(body), -1, http.Header{"X-Checksum": {"c1"}})
		got := ingested(t)
		if resp.StatusCode != 200 || got.Lines != 2 || got.Redacted != 2 || got.Bad != "" || got.ReadErr != "" {
			t.Errorf("status %d, upstream saw %+v; want 2 lines redacted", resp.StatusCode, got)
		}
		if got.Trailer != "c1" {
			t.Errorf("upstream trailer X-Checksum %q, want c1", got.Trailer)
		}
	})

	t.Run("response trailers end the body: the held last line goes first", func(t *testing.T) {
		resp := get(t, "lines=3&trailer=1")
		lines, bad, err, secret := readNDJSON(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || lines != 3 || bad != "" || err != nil || secret {
			t.Errorf("status %d: %d lines, bad %q, error %v, secret %v; want 3 redacted lines", resp.StatusCode, lines, bad, err, secret)
		}
		if got := resp.Trailer.Get("X-Lines"); got != "3" {
			t.Errorf("trailer X-Lines %q, want 3", got)
		}
		if err := <-up.streams; err != nil {
			t.Errorf("upstream: %v", err)
		}
	})

	t.Run("a line longer than maxLineBytes in a request: 413 mid-stream", func(t *testing.T) {
		// 2 MiB of good lines have gone upstream when the long line
		// arrives: Envoy answers 413 and resets the upstream request.
		const good = 2 << 20 / duplexLineLen
		resp, b := post(t, &ndjsonReader{lines: 2 * good, longAt: good}, -1, nil)
		if resp.StatusCode != 413 || !strings.Contains(string(b), "longer than 65536 bytes") {
			t.Errorf("status %d %q, want 413 from ndjsonRedact", resp.StatusCode, b)
		}
		if got := ingested(t); got.ReadErr == "" || got.Lines > good || got.Bad != "" {
			t.Errorf("upstream saw %+v; want at most the %d lines before the long one, then a reset", got, good)
		}
	})

	t.Run("a line longer than maxLineBytes in a response: reset mid-stream", func(t *testing.T) {
		// The 200 and the lines before the long one have left: Envoy can
		// only reset the stream, and the long line never arrives.
		const good = 10000
		resp := get(t, fmt.Sprintf("lines=%d&longAt=%d", 2*good, good))
		lines, bad, err, secret := readNDJSON(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || err == nil || lines > good || bad != "" || secret {
			t.Errorf("status %d: %d lines, bad %q, error %v, secret %v; want at most %d redacted lines, then an error", resp.StatusCode, lines, bad, err, secret, good)
		}
		// The upstream may have written it all into Envoy's buffers first.
		select {
		case err := <-up.streams:
			t.Logf("the upstream stopped writing: %v", err)
		case <-time.After(30 * time.Second):
			t.Errorf("the upstream is still writing")
		}
	})

	t.Run("64 MiB each way with bounded memory", func(t *testing.T) {
		const size = 64 << 20
		const lines = size / duplexLineLen
		// A small exchange first, so that the connection and the
		// server's buffers exist before the baseline is read.
		post(t, strings.NewReader(string(ndjsonLine(0, "password", requestSecret))), -1, nil)
		ingested(t)
		rss0, hwm0 := procMemory(t, eps.Pid())

		start := time.Now()
		resp, b := post(t, &ndjsonReader{lines: lines, longAt: -1}, size, nil)
		got := ingested(t)
		if resp.StatusCode != 200 || got.Lines != lines || got.Redacted != lines || got.Bad != "" || got.ReadErr != "" {
			t.Errorf("POST 64 MiB: status %d %.200q; upstream saw %+v; want %d lines, all redacted", resp.StatusCode, b, got, lines)
		}
		up1 := time.Since(start)

		start = time.Now()
		sr := get(t, fmt.Sprintf("lines=%d", lines))
		n, bad, err, secret := readNDJSON(sr.Body)
		sr.Body.Close()
		if sr.StatusCode != 200 || n != lines || bad != "" || err != nil || secret {
			t.Errorf("GET 64 MiB: status %d: %d lines, bad %q, error %v, secret %v; want %d redacted lines", sr.StatusCode, n, bad, err, secret, lines)
		}
		if err := <-up.streams; err != nil {
			t.Errorf("upstream: %v", err)
		}
		down := time.Since(start)

		rss1, hwm1 := procMemory(t, eps.Pid())
		const mib = 1 << 20
		t.Logf("extprocserver memory: RSS %d MiB before, %d MiB after, peak %d MiB (peak before %d MiB); 64 MiB up in %s, down in %s",
			rss0/mib, rss1/mib, hwm1/mib, hwm0/mib, up1.Round(time.Millisecond), down.Round(time.Millisecond))
		// Holding either body whole would add 64 MiB; the server may hold
		// a line (64 KiB), gRPC's flow-control windows (1 MiB per stream,
		// 8 MiB per connection) and what the garbage collector has not
		// returned yet (measured: 14 to 23 MiB, the RSS before being lower
		// when the runtime had just returned memory).
		if grew := hwm1 - rss0; grew > 40*mib {
			t.Errorf("extprocserver peak RSS grew by %d MiB while 64 MiB bodies streamed through (bound 40 MiB)", grew/mib)
		}
	})
}
