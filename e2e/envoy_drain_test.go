package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestEnvoyReadyAndDrain: the bootstrap's ready listener answers GET /ready
// from Envoy's admin interface and nothing else of it; `portcullis
// envoy-drain` (the chart's drainer) turns /ready to 503 and drains Envoy
// under load with no failed request, for its drain time.
func TestEnvoyReadyAndDrain(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	objects := harness.Dir(t.TempDir())
	if err := objects.Apply(context.Background(), append(harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port), leaderProxy("first"))...); err != nil {
		t.Fatal(err)
	}
	httpAddr, ready := harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, harness.FreeAddr(t), "--provider", "file", "-f", string(objects))
	envoy := harness.StartEnvoyOn(t, cp.XDSAddr, "--ready-address", ready)
	harness.EventuallyEcho(t, harness.HTTPClient(httpAddr), harness.MustRequest(t, "http://first.example.com/"), http.StatusOK)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + ready + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/ready"); code != http.StatusOK || body != "LIVE" {
		t.Fatalf("GET /ready on the ready listener: %d %q, want 200 LIVE", code, body)
	}
	for _, path := range []string{"/stats", "/config_dump", "/healthcheck/fail"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("GET %s on the ready listener: %d, want 404 (only /ready is exposed)", path, code)
		}
	}

	load := harness.StartSteadyLoad(2, 5*time.Second, echoRequests(httpAddr, "first.example.com"))
	time.Sleep(time.Second)
	portcullis := harness.BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	start := time.Now()
	if out, err := harness.RunCommand(portcullis, "envoy-drain", "--envoy-admin-address", envoy.AdminAddr, "--drain-time", "2s"); err != nil {
		t.Fatalf("portcullis envoy-drain: %v\n%s", err, out)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("envoy-drain returned after %v, before its drain time", took)
	}
	if code, body := get("/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /ready while draining: %d %q, want 503", code, body)
	}
	r := load.Wait()
	t.Logf("load across the drain: %s", r)
	if r.Requests == 0 || r.Errors != 0 {
		t.Errorf("load across the drain: %s; want requests and none failed", r)
	}
}
