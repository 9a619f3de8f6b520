package e2e

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyWebsocketsAndRetries: a route with enableWebsockets
// upgrades a connection to the upstream and carries its bytes both ways,
// a route without it does not; a route's retryPolicy retries a flaky
// upstream's 503, a route without one returns it. Through the file
// provider into the real Envoy.
func TestHTTPProxyWebsocketsAndRetries(t *testing.T) {
	wsAddr := startUpgradeEcho(t)
	flaky := &flakyUpstream{attempts: map[string]int{}}
	flakyAddr := serveHTTP(t, flaky)
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "ws", 80, harness.Port(t, wsAddr))...)
	all = append(all, harness.LoopbackEndpointSlice("default", "flaky", 80, harness.Port(t, flakyAddr))...)
	svc := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 80}} }
	prefix := func(p string) []contourv1.MatchCondition { return []contourv1.MatchCondition{{Prefix: p}} }
	all = append(all, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "upgrade-retry"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "app.example.com"},
		Routes: []contourv1.Route{
			{Conditions: prefix("/ws"), EnableWebsockets: true, Services: svc("ws")},
			{Conditions: prefix("/no-ws"), Services: svc("ws")},
			{Conditions: prefix("/retry"), RetryPolicy: &contourv1.RetryPolicy{NumRetries: 2, RetryOn: []contourv1.RetryOn{"5xx"}, PerTryTimeout: "2s"}, Services: svc("flaky")},
			{Conditions: prefix("/no-retry"), Services: svc("flaky")},
		},
	}})
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyStatus(t, c, "http://app.example.com/no-ws", http.StatusOK)

	t.Run("websocket upgrade carries bytes both ways", func(t *testing.T) {
		status, echoed, err := upgrade(httpAddr, "/ws", "ping through envoy")
		if err != nil || !strings.HasPrefix(status, "HTTP/1.1 101") || echoed != "ping through envoy" {
			t.Errorf("status %q, echoed %q, %v; want 101 and the bytes back", status, echoed, err)
		}
	})
	t.Run("no upgrade without enableWebsockets", func(t *testing.T) {
		status, _, err := upgrade(httpAddr, "/no-ws", "ping")
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(status, "HTTP/1.1 101") {
			t.Errorf("status %q: upgraded on a route without enableWebsockets", status)
		}
	})
	t.Run("retryPolicy retries the 503", func(t *testing.T) {
		resp := doRequest(t, c, attempt(t, "/retry", "a"))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "attempt 2" || flaky.count("a") != 2 {
			t.Errorf("status %d, body %q, %d attempts; want 200 from the second attempt", resp.StatusCode, body, flaky.count("a"))
		}
	})
	t.Run("no retry without retryPolicy", func(t *testing.T) {
		resp := doRequest(t, c, attempt(t, "/no-retry", "b"))
		if resp.StatusCode != http.StatusServiceUnavailable || flaky.count("b") != 1 {
			t.Errorf("status %d, %d attempts; want the upstream's 503 after one attempt", resp.StatusCode, flaky.count("b"))
		}
	})
}

func attempt(t *testing.T, path, key string) *http.Request {
	r, err := http.NewRequest(http.MethodGet, "http://app.example.com"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("x-attempt-key", key)
	return r
}

// flakyUpstream answers 503 to the first attempt of each x-attempt-key and
// 200 "attempt N" to the next ones.
type flakyUpstream struct {
	mu       sync.Mutex
	attempts map[string]int
}

func (f *flakyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.attempts[r.Header.Get("x-attempt-key")]++
	n := f.attempts[r.Header.Get("x-attempt-key")]
	f.mu.Unlock()
	if n == 1 {
		http.Error(w, "flaky", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "attempt %d", n)
}

func (f *flakyUpstream) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[key]
}

// serveHTTP serves h on a loopback port until the test ends.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }() // returns when the cleanup closes it
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// startUpgradeEcho serves websocket upgrades (101, then every byte echoed
// back) and answers 200 "plain" to other requests.
func startUpgradeEcho(t *testing.T) string {
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			_, _ = io.WriteString(w, "plain") // a client that went away reads nothing
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", websocketAccept(r.Header.Get("Sec-WebSocket-Key")))
		rw.Flush()
		_, _ = io.Copy(conn, rw) // echoes until either side closes
	}))
}

func websocketAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// upgrade asks Envoy at addr for a websocket upgrade of path on
// app.example.com; on 101 it sends msg and reads as many bytes back. It
// returns the status line and what came back.
func upgrade(addr, path, msg string) (status, echoed string, err error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", "", err
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: app.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", path)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", "", err
	}
	status = "HTTP/1.1 " + resp.Status
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return status, "", nil
	}
	if _, err := io.WriteString(conn, msg); err != nil {
		return status, "", err
	}
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(br, buf)
	return status, string(buf), err
}
