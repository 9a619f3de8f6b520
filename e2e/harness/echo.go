package harness

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// EchoRequest is what Echo answers: a description of the request it got.
type EchoRequest struct {
	Name    string      `json:"name"` // the Echo's name, to tell upstreams apart
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Proto   string      `json:"proto"`
	Headers http.Header `json:"headers"`
	Body    string      `json:"body"`
}

// Echo is an in-process HTTP upstream on 127.0.0.1 that answers every
// request with 200 and the JSON of an EchoRequest. It speaks HTTP/1.1 and
// h2c (HTTP/2 with prior knowledge).
type Echo struct {
	Name string
	Addr string // 127.0.0.1:port
	Port int

	count atomic.Int64
	mu    sync.Mutex
	last  *EchoRequest
}

// StartEcho starts an Echo, stopped when the test ends.
func StartEcho(t testing.TB, name string) *Echo {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("echo %s: %v", name, err)
	}
	e := &Echo{Name: name, Addr: l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: e, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l) }() // returns when the cleanup closes it
	t.Cleanup(func() { srv.Close() })
	return e
}

// ServeHTTP implements http.Handler.
func (e *Echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := &EchoRequest{
		Name:    e.Name,
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		Host:    r.Host,
		Proto:   r.Proto,
		Headers: r.Header.Clone(),
		Body:    string(body),
	}
	e.mu.Lock()
	e.last = req
	e.mu.Unlock()
	e.count.Add(1)
	out, _ := json.Marshal(req)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out) // a client that went away has nothing to read
}

// Requests returns how many requests Echo has answered.
func (e *Echo) Requests() int64 { return e.count.Load() }

// LastRequest returns the last request Echo answered, or nil.
func (e *Echo) LastRequest() *EchoRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// DecodeEcho parses an Echo response body.
func DecodeEcho(body []byte) (*EchoRequest, error) {
	var r EchoRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
