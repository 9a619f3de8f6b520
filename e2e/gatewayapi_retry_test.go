package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestGatewayAPIRetry: an HTTPRoute rule's retry makes the real Envoy
// call its backend again when a try is cut by the backendRequest timeout
// (HTTPRouteRetryBackendTimeout) and when the backend's connection is
// reset before it answers (HTTPRouteRetryConnectionError): attempts
// retries, then the error; a rule without retry calls once. The backend
// is an echo behind a harness.SlowPeer, which counts the calls and makes
// them slow or reset; a fault cleared after the first call lets the retry
// succeed. Through the file provider: retry is an experimental field,
// which the standard-channel CRDs the chart installs prune.
func TestGatewayAPIRetry(t *testing.T) {
	dir := t.TempDir()
	httpAddr := gatewayEnvoyAddr(t, 80)
	harness.StartEnvoyAndControlPlaneAt(t, httpAddr, gatewayEnvoyAddr(t, 443), "--provider", "file", "-f", dir)
	echo := harness.StartEcho(t, "retried")
	peer := harness.StartSlowPeer(t, echo.Addr)

	objs := harness.LoopbackEndpointSlice(gwNS, "slow", 80, harness.Port(t, peer.Addr))
	withRule := func(path string, timeouts *gwapiv1.HTTPRouteTimeouts, retry *gwapiv1.HTTPRouteRetry) gwapiv1.HTTPRouteRule {
		r := rule("slow", pathMatch(gwapiv1.PathMatchPathPrefix, path))
		r.Timeouts, r.Retry = timeouts, retry
		return r
	}
	perTry := &gwapiv1.HTTPRouteTimeouts{Request: ptr.To(gwapiv1.Duration("10s")), BackendRequest: ptr.To(gwapiv1.Duration("500ms"))}
	twice := &gwapiv1.HTTPRouteRetry{Attempts: ptr.To(2), Backoff: ptr.To(gwapiv1.Duration("50ms"))}
	objs = append(objs,
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		httpRoute(gwNS, "retry", parentRef("gw", ""), hostnames("retry.example.com"),
			withRule("/timeout-retry", perTry, twice),
			withRule("/timeout-once", perTry, nil),
			withRule("/reset-retry", nil, twice),
			withRule("/reset-once", nil, nil)),
	)
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	for _, p := range []string{"/timeout-retry", "/timeout-once", "/reset-retry", "/reset-once"} {
		harness.EventuallyStatus(t, c, "http://retry.example.com"+p, http.StatusOK)
	}

	// calls sends one request to path and returns its status, its body
	// and how many calls the backend got for it.
	calls := func(t *testing.T, path string) (int, string, int) {
		t.Helper()
		before := len(peer.Requests())
		resp, err := c.Get("http://retry.example.com" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), len(peer.Requests()) - before
	}
	// recovers: the fault holds for the first call only (cleared 100ms
	// after it, once the peer holds the echo's answer under the fault:
	// delayed beyond backendRequest, or reset after a delay); the retry
	// gets the echo's answer.
	recovers := func(t *testing.T, path string, f harness.Fault) {
		t.Helper()
		peer.SetFault(f)
		defer peer.SetFault(harness.Fault{})
		before := len(peer.Requests())
		done := make(chan error, 1)
		go func() {
			resp, err := c.Get("http://retry.example.com" + path)
			if err == nil {
				defer resp.Body.Close()
				if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d (%q)", resp.StatusCode, body)
				}
			}
			done <- err
		}()
		for deadline := time.Now().Add(5 * time.Second); len(peer.Requests()) == before; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the backend got no call")
			}
		}
		time.Sleep(100 * time.Millisecond)
		peer.SetFault(harness.Fault{})
		if err := <-done; err != nil {
			t.Errorf("%s: %v, want the retry's 200", path, err)
		}
		if n := len(peer.Requests()) - before; n != 2 {
			t.Errorf("%s: %d calls, want 2 (the faulty one and its retry)", path, n)
		}
	}

	t.Run("a try cut by backendRequest is retried attempts times, then 504", func(t *testing.T) {
		peer.SetFault(harness.Fault{Delay: 3 * time.Second})
		defer peer.SetFault(harness.Fault{})
		start := time.Now()
		status, _, n := calls(t, "/timeout-retry")
		if took := time.Since(start); status != http.StatusGatewayTimeout || n != 3 || took > 2500*time.Millisecond {
			t.Errorf("status %d after %d calls in %v; want 504 after 3 tries of 500ms", status, n, took)
		}
		if status, _, n := calls(t, "/timeout-once"); status != http.StatusGatewayTimeout || n != 1 {
			t.Errorf("without retry: status %d after %d calls; want 504 after 1", status, n)
		}
	})
	t.Run("a retry after a try cut by backendRequest gets the answer", func(t *testing.T) {
		recovers(t, "/timeout-retry", harness.Fault{Delay: 3 * time.Second})
	})
	t.Run("a connection reset before the answer is retried attempts times, then fails", func(t *testing.T) {
		peer.SetFault(harness.Fault{ResetAfter: 1})
		defer peer.SetFault(harness.Fault{})
		// A reset after a byte of the answer is a protocol error to Envoy
		// (502) when it read the byte first, a reset before the answer
		// (503) when the reset came first: a race of the loopback, so
		// either is a failure; the number of calls is what retry decides.
		failed := func(status int) bool {
			return status == http.StatusBadGateway || status == http.StatusServiceUnavailable
		}
		if status, _, n := calls(t, "/reset-retry"); !failed(status) || n != 3 {
			t.Errorf("status %d after %d calls; want 502 or 503 after 3", status, n)
		}
		if status, _, n := calls(t, "/reset-once"); !failed(status) || n != 1 {
			t.Errorf("without retry: status %d after %d calls; want 502 or 503 after 1", status, n)
		}
	})
	t.Run("a retry after a reset gets the answer", func(t *testing.T) {
		recovers(t, "/reset-retry", harness.Fault{Delay: 300 * time.Millisecond, ResetAfter: 1})
	})
}
