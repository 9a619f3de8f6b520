package harness

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is how a SlowPeer misbehaves. The zero Fault forwards faithfully.
// Faults apply to the server's bytes on their way to the client (answers
// are what a slow peer makes late), and a change applies at once to open
// connections too.
type Fault struct {
	// Delay holds each chunk of the server's bytes this long before it is
	// passed on: latency, not throughput (chunks stay pipelined).
	Delay time.Duration
	// BytesPerSecond passes the server's bytes on at this rate (slow
	// bytes); 0 for no limit.
	BytesPerSecond int
	// ResetAfter resets both sides of a connection (RST) once this many of
	// the server's bytes were passed on; 0 for never.
	ResetAfter int64
	// BlackHole accepts connections and passes nothing on in either
	// direction: a peer that takes calls and never answers.
	BlackHole bool
}

// SlowPeer is a TCP proxy placed between a client (Envoy, an auth server)
// and a server (an ExtensionService, an identity provider) that makes the
// server as slow or faulty as real peers are: late answers, slow bytes,
// resets, black holes. It sees bytes, not protocols, so it works for
// gRPC, HTTP/1 and TLS alike.
type SlowPeer struct {
	Addr   string // where clients connect, 127.0.0.1:port
	target string

	ln       net.Listener
	fault    atomic.Pointer[Fault]
	accepted atomic.Int64

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	requests []string // HTTP/1 request lines seen (plaintext only)
	wg       sync.WaitGroup
}

// StartSlowPeer listens on a free loopback port and forwards each
// connection to target, faithfully until SetFault. It stops, closing every
// connection, when the test ends.
func StartSlowPeer(t testing.TB, target string) *SlowPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &SlowPeer{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.fault.Store(&Fault{})
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// SetFault changes how the peer misbehaves from now on.
func (p *SlowPeer) SetFault(f Fault) { p.fault.Store(&f) }

// Accepted is the number of connections clients opened.
func (p *SlowPeer) Accepted() int64 { return p.accepted.Load() }

// Requests are the HTTP/1 request lines ("POST /token HTTP/1.1") clients
// sent through the peer so far, for a plaintext HTTP/1 server: how a test
// counts the calls a client made.
func (p *SlowPeer) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Close stops listening and closes every connection.
func (p *SlowPeer) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil // connections accepted from now on are closed at once
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *SlowPeer) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.handle(c)
	}
}

// track adds c to the open connections; false once the peer is closed.
func (p *SlowPeer) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *SlowPeer) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *SlowPeer) handle(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	if p.fault.Load().BlackHole {
		_, _ = io.Copy(io.Discard, client) // until the client or Close ends it
		p.untrack(client)
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		p.untrack(client)
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.upstream(client, server); done <- struct{}{} }()
	go func() { p.downstream(server, client); done <- struct{}{} }()
	<-done // either side gone: both go
	p.untrack(client, server)
	<-done
}

// upstream passes the client's bytes on to the server (nothing while the
// peer is a black hole), noting HTTP/1 request lines.
func (p *SlowPeer) upstream(client, server net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 && !p.fault.Load().BlackHole {
			p.noteRequest(buf[:n])
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// noteRequest records b's first line when b starts an HTTP/1 request.
func (p *SlowPeer) noteRequest(b []byte) {
	for _, m := range []string{"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "PATCH ", "OPTIONS "} {
		if bytes.HasPrefix(b, []byte(m)) {
			line, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
			p.mu.Lock()
			p.requests = append(p.requests, string(line))
			p.mu.Unlock()
			return
		}
	}
}

// chunk is a piece of the server's bytes and when it was read.
type chunk struct {
	b  []byte
	at time.Time
}

// downstream reads the server's bytes as they come and passes each chunk
// on once its fault allows: reading and writing run apart so that a delay
// is latency, not a pause of the stream.
func (p *SlowPeer) downstream(server, client net.Conn) {
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := server.Read(b)
			if n > 0 {
				chunks <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var sent int64
	for c := range chunks {
		f := p.fault.Load()
		if f.BlackHole {
			continue
		}
		time.Sleep(time.Until(c.at.Add(f.Delay)))
		if err := p.pass(client, c.b, f, &sent); err != nil {
			server.Close() // ends the reader, and so this loop
			for range chunks {
			}
			return
		}
	}
}

// errReset is a connection reset on purpose (Fault.ResetAfter).
var errReset = errors.New("reset by the slow peer")

// pass writes b to the client at the fault's rate, resetting the
// connection once ResetAfter bytes went through.
func (p *SlowPeer) pass(client net.Conn, b []byte, f *Fault, sent *int64) error {
	for len(b) > 0 {
		n := len(b)
		if f.BytesPerSecond > 0 {
			n = min(n, max(f.BytesPerSecond/10, 1)) // a tenth of a second's worth
		}
		if f.ResetAfter > 0 {
			n = min(n, int(f.ResetAfter-*sent))
		}
		if n > 0 {
			if _, err := client.Write(b[:n]); err != nil {
				return err
			}
			*sent += int64(n)
			b = b[n:]
		}
		if f.ResetAfter > 0 && *sent >= f.ResetAfter {
			if tc, ok := client.(*net.TCPConn); ok {
				// Close sends RST, not FIN. SetLinger fails only on a closed
				// connection, which there is no resetting.
				_ = tc.SetLinger(0)
			}
			return errReset
		}
		if f.BytesPerSecond > 0 {
			time.Sleep(time.Duration(n) * time.Second / time.Duration(f.BytesPerSecond))
		}
	}
	return nil
}
