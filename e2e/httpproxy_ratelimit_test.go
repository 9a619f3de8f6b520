package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// rateLimitDomain is the domain of the rate limit service's
// configuration in TestHTTPProxyGlobalRateLimits.
const rateLimitDomain = "portcullis-e2e"

// rateLimitConfig is the real rate limit service's configuration: limits
// by the hour, so that none refills during the test.
const rateLimitConfig = `domain: ` + rateLimitDomain + `
descriptors:
- key: generic_key
  value: host
  rate_limit: {unit: hour, requests_per_unit: 3}
- key: generic_key
  value: route
  descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 2}
- key: plan
  value: free
  rate_limit: {unit: hour, requests_per_unit: 1}
`

// TestHTTPProxyGlobalRateLimits: rateLimitPolicy.global through the file
// provider into the real Envoy and the real rate limit service
// (github.com/envoyproxy/ratelimit) on a real Redis: a host's descriptor
// counts its routes' requests, a route's own descriptors (a generic key
// with the client's address) replace the host's, a request header's value
// is counted per value, a route that disables them is not limited, the
// service's 429 and X-RateLimit headers reach the client; and with the
// service gone, requests fail closed.
func TestHTTPProxyGlobalRateLimits(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	redis := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.StartProcess(t, "redis", harness.Tool(t, "redis-server"), "--bind", "127.0.0.1", "--port", fmt.Sprint(harness.Port(t, redis)),
		"--save", "", "--appendonly", "no")
	// The service connects to Redis as it starts (and exits if it cannot).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, redis); err != nil {
		t.Fatalf("redis at %s: %v", redis, err)
	}
	rls, rlsProcess := startRateLimitService(t, redis)
	// Faithful until the slow subtest: Envoy reaches the service through it.
	peer := harness.StartSlowPeer(t, rls)

	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf("rateLimitService:\n  extensionService: default/ratelimit\n  domain: %s\n  enableXRateLimitHeaders: true\n", rateLimitDomain))
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir, "--config", cfg)
	h2c := "h2c"
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	entries := func(es ...contourv1.RateLimitDescriptorEntry) *contourv1.RateLimitPolicy {
		return &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Descriptors: []contourv1.RateLimitDescriptor{{Entries: es}}}}
	}
	generic := func(v string) contourv1.RateLimitDescriptorEntry {
		return contourv1.RateLimitDescriptorEntry{GenericKey: &contourv1.GenericKeyDescriptor{Value: v}}
	}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "ratelimit", 8081, harness.Port(t, peer.Addr))...)
	all = append(all,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ratelimit"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "ratelimit", Port: 8081}}}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "limited"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "limited.example.com", RateLimitPolicy: entries(generic("host"))},
			Routes: []contourv1.Route{
				{Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/b"}}, Services: svc},
				{
					Conditions:      []contourv1.MatchCondition{{Prefix: "/per-client"}},
					RateLimitPolicy: entries(generic("route"), contourv1.RateLimitDescriptorEntry{RemoteAddress: &contourv1.RemoteAddressDescriptor{}}),
					Services:        svc,
				},
				{
					Conditions:      []contourv1.MatchCondition{{Prefix: "/plans"}},
					RateLimitPolicy: entries(contourv1.RateLimitDescriptorEntry{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: "x-plan", DescriptorKey: "plan"}}),
					Services:        svc,
				},
				{
					Conditions:      []contourv1.MatchCondition{{Prefix: "/unlimited"}},
					RateLimitPolicy: &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Disabled: true}},
					Services:        svc,
				},
			},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	// Served. The route disables the host's descriptors: the host's 3
	// are all left.
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://limited.example.com/unlimited"), http.StatusOK)

	statuses := func(path string, n int, headers ...string) []int {
		var got []int
		for range n {
			r := harness.MustRequest(t, "http://limited.example.com"+path)
			for i := 0; i+1 < len(headers); i += 2 {
				r.Header.Set(headers[i], headers[i+1])
			}
			resp := doRequest(t, c, r)
			_, _ = io.Copy(io.Discard, resp.Body) // only the status and headers count
			got = append(got, resp.StatusCode)
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-Envoy-Ratelimited") != "true" {
				t.Errorf("%s: a 429 not from the rate limit service: %v", path, resp.Header)
			}
		}
		return got
	}
	check := func(name string, got []int, want ...int) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: answers %v, want %v", name, got, want)
		}
	}
	check("a route that disables the host's descriptors", statuses("/unlimited", 5), 200, 200, 200, 200, 200)
	check("the host's descriptor counts its routes", append(statuses("/", 2), statuses("/b", 2)...), 200, 200, 200, 429)
	check("a route's own descriptors replace the host's", statuses("/per-client", 3), 200, 200, 429)
	check("a request header counted per value", statuses("/plans", 2, "x-plan", "free"), 200, 429)
	check("another value has no limit", statuses("/plans", 3, "x-plan", "pro"), 200, 200, 200)
	check("a request without the header sends no descriptor", statuses("/plans", 3), 200, 200, 200)

	t.Run("the service's headers reach the client", func(t *testing.T) {
		resp := doRequest(t, c, harness.MustRequest(t, "http://limited.example.com/b"))
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-Ratelimit-Limit") == "" {
			t.Errorf("status %d, headers %v: want 429 with X-RateLimit-Limit", resp.StatusCode, resp.Header)
		}
	})
	t.Run("a service answering in 1 s is waited for, each call sent once", func(t *testing.T) {
		// Under the 2 s default timeout: a call cut sooner fails closed
		// (500, as it did at Envoy's 250 ms per-try timeout), and a call
		// sent twice would count a hit twice.
		peer.SetFault(harness.Fault{Delay: time.Second})
		defer peer.SetFault(harness.Fault{})
		check("slow: another value", statuses("/plans", 2, "x-plan", "slow"), 200, 200)
		check("slow: a value over its limit", statuses("/plans", 1, "x-plan", "free"), 429)
		check("slow: a route over its limit", statuses("/per-client", 1), 429)
	})
	t.Run("without the service, requests fail closed", func(t *testing.T) {
		rlsProcess.Stop()
		harness.Eventually(t, 30*time.Second, func() error {
			if got := statuses("/plans", 1, "x-plan", "pro"); got[0] != http.StatusInternalServerError {
				return fmt.Errorf("status %d, want 500", got[0])
			}
			return nil
		})
		if code, err := harness.StatusCode(c, "http://limited.example.com/unlimited"); err != nil || code != http.StatusOK {
			t.Errorf("a route without descriptors: status %d (%v), want 200", code, err)
		}
	})
}

// startRateLimitService runs the real rate limit service with
// rateLimitConfig on redis, its gRPC port on 127.0.0.1; it returns that
// address once it listens, and the process.
func startRateLimitService(t *testing.T, redis string) (string, *harness.Process) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ratelimit", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ratelimit", "config", "e2e.yaml"), []byte(rateLimitConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	p := harness.NewProcess(t, "ratelimit", harness.Tool(t, "ratelimit"))
	p.Env = []string{
		"LOG_LEVEL=warn", "USE_STATSD=false", "USE_PROMETHEUS=false",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redis,
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false", "RUNTIME_IGNOREDOTFILES=true",
		"HOST=127.0.0.1", fmt.Sprintf("PORT=%d", harness.FreePort(t)),
		"GRPC_HOST=127.0.0.1", fmt.Sprintf("GRPC_PORT=%d", harness.Port(t, grpcAddr)),
		"DEBUG_HOST=127.0.0.1", fmt.Sprintf("DEBUG_PORT=%d", harness.FreePort(t)),
	}
	p.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, grpcAddr); err != nil {
		t.Fatalf("rate limit service at %s: %v", grpcAddr, err)
	}
	return grpcAddr, p
}
