package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// pollInterval is how often the Wait helpers and Eventually retry.
const pollInterval = 50 * time.Millisecond

var usedPorts struct {
	sync.Mutex
	m map[int]bool
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. A port
// is never handed out twice by the same test binary, but another process can
// still take it before it is used: prefer letting a server bind port 0 and
// report its address when it can.
func FreePort(t testing.TB) int {
	t.Helper()
	usedPorts.Lock()
	defer usedPorts.Unlock()
	if usedPorts.m == nil {
		usedPorts.m = map[int]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("FreePort: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !usedPorts.m[port] {
			usedPorts.m[port] = true
			return port
		}
	}
	t.Fatalf("FreePort: no new free port found")
	return 0
}

// WaitTCP waits until addr (host:port) accepts TCP connections.
func WaitTCP(ctx context.Context, addr string) error {
	return poll(ctx, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// WaitHTTP waits until a GET of url answers wantStatus.
func WaitHTTP(ctx context.Context, url string, wantStatus int) error {
	client := &http.Client{
		Timeout:       2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return WaitHTTPWith(ctx, client, url, wantStatus)
}

// WaitHTTPWith is WaitHTTP with the client's TLS settings and timeout.
func WaitHTTPWith(ctx context.Context, client *http.Client, url string, wantStatus int) error {
	return poll(ctx, func() error { return GetStatus(ctx, client, url, wantStatus) })
}

// GetStatus GETs url once and says what is wrong unless it answered
// wantStatus.
func GetStatus(ctx context.Context, client *http.Client, url string, wantStatus int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_ = resp.Body.Close() // read to the limit; nothing more is wanted
	if resp.StatusCode != wantStatus {
		return fmt.Errorf("GET %s: status %d, want %d: %q", url, resp.StatusCode, wantStatus, body)
	}
	return nil
}

// Eventually calls cond until it returns nil, failing the test with the last
// error if that has not happened within timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := poll(ctx, cond); err != nil {
		t.Fatalf("condition not met within %v: %v", timeout, err)
	}
}

// poll calls f until it succeeds, returns a permanent error, or ctx ends,
// then returns f's last error.
func poll(ctx context.Context, f func() error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		var p permanentError
		if errors.As(err, &p) {
			return p.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// permanentError makes poll give up at once.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
