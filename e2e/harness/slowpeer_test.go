package harness

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startLineEcho answers each line it reads with the same line.
func startLineEcho(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends line through addr and reads the answer, within limit.
func roundTrip(t *testing.T, addr, line string, limit time.Duration) (string, time.Duration, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(limit)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Write([]byte(line)); err != nil {
		return "", 0, err
	}
	got, err := io.ReadAll(io.LimitReader(c, int64(len(line))))
	return string(got), time.Since(start), err
}

func TestSlowPeer(t *testing.T) {
	p := StartSlowPeer(t, startLineEcho(t))
	line := strings.Repeat("x", 99) + "\n"

	got, _, err := roundTrip(t, p.Addr, line, 5*time.Second)
	if err != nil || got != line {
		t.Fatalf("faithful: %q, %v", got, err)
	}

	p.SetFault(Fault{Delay: 300 * time.Millisecond})
	// A lower bound only: the delay must be there; how much longer a busy
	// machine takes is not this test's business.
	if got, took, err := roundTrip(t, p.Addr, line, 5*time.Second); err != nil || got != line || took < 300*time.Millisecond {
		t.Errorf("delay 300ms: %q in %v, %v; want the line after at least 300ms", got, took, err)
	}

	p.SetFault(Fault{BytesPerSecond: 200})
	if got, took, err := roundTrip(t, p.Addr, line, 5*time.Second); err != nil || got != line || took < 400*time.Millisecond {
		t.Errorf("200 bytes/s: %q in %v, %v; want 100 bytes after at least 0.4s", got, took, err)
	}

	p.SetFault(Fault{ResetAfter: 10})
	got, _, err = roundTrip(t, p.Addr, line, 5*time.Second)
	if len(got) != 10 || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reset after 10 bytes: got %d bytes, %v; want 10 and a reset", len(got), err)
	}

	p.SetFault(Fault{BlackHole: true})
	got, _, err = roundTrip(t, p.Addr, line, 500*time.Millisecond)
	var ne net.Error
	if got != "" || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("black hole: %q, %v; want nothing until the deadline", got, err)
	}

	p.SetFault(Fault{})
	if got, _, err := roundTrip(t, p.Addr, "GET /x HTTP/1.1\n", 5*time.Second); err != nil || got != "GET /x HTTP/1.1\n" {
		t.Errorf("faithful again: %q, %v", got, err)
	}
	if r := p.Requests(); len(r) != 1 || r[0] != "GET /x HTTP/1.1" {
		t.Errorf("requests seen %q, want the one GET", r)
	}
	if n := p.Accepted(); n != 6 {
		t.Errorf("%d connections accepted, want 6", n)
	}
}
