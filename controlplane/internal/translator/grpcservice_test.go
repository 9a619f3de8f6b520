package translator

import (
	"testing"
	"time"
)

// Every call to an ExtensionService is sent again, to another endpoint,
// only when it never reached a server, and never after its answer began.
func TestGrpcServiceRetries(t *testing.T) {
	timeout := time.Second
	for _, tc := range []struct {
		name, in string
	}{
		{"ext_authz", grpcService("extension/auth/authz", "authz.auth", &timeout).GetRetryPolicy().GetRetryOn()},
		{"ext_proc (no timeout)", grpcService("extension/p/p", "p.p", nil).GetRetryPolicy().GetRetryOn()},
		{"rate limit", rateLimitService("extension/rl/rl", "rl.rl", 20*time.Millisecond).GetRetryPolicy().GetRetryOn()},
	} {
		// "reset" (the old value) also resends a call the server was
		// answering, and a call cut by its per-try timeout.
		if want := "connect-failure,refused-stream,reset-before-request"; tc.in != want {
			t.Errorf("%s: retry_on = %q, want %q", tc.name, tc.in, want)
		}
	}
	p := grpcService("c", "a", nil).GetRetryPolicy()
	if p.GetNumRetries().GetValue() != 2 || len(p.GetRetryHostPredicate()) != 1 ||
		p.GetRetryHostPredicate()[0].GetName() != "envoy.retry_host_predicates.previous_hosts" {
		t.Errorf("retries %d, host predicates %v; want 2 retries to hosts not tried yet", p.GetNumRetries().GetValue(), p.GetRetryHostPredicate())
	}
	if b := p.GetRetryBackOff().GetBaseInterval().AsDuration(); b != 25*time.Millisecond {
		t.Errorf("backoff base %v, want 25ms (Envoy's default here is 1s)", b)
	}
}

// Envoy makes a GrpcService's retry_back_off.max_interval the per-try
// timeout of each call: it must never be shorter than the call's own
// timeout (it was 250 ms, which cut every Check under "response: 5s").
func TestGrpcServicePerTryTimeout(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	for _, tc := range []struct {
		name    string
		timeout *time.Duration
		want    time.Duration
	}{
		{"response: 5s", d(5 * time.Second), 5 * time.Second},
		{"response: 300ms", d(300 * time.Millisecond), 300 * time.Millisecond},
		{"response: 2m", d(2 * time.Minute), 2 * time.Minute},
		{"shorter than the backoff base: the base (Envoy refuses max < base)", d(10 * time.Millisecond), 25 * time.Millisecond},
		{"infinity", d(0), time.Hour},
		{"unset (an ext_proc stream)", nil, time.Hour},
		{"longer than an hour", d(3 * time.Hour), time.Hour},
	} {
		p := grpcService("c", "a", tc.timeout).GetRetryPolicy()
		if got := p.GetRetryBackOff().GetMaxInterval().AsDuration(); got != tc.want {
			t.Errorf("%s: max_interval (Envoy's per-try timeout) %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := rateLimitService("c", "a", 20*time.Millisecond).GetRetryPolicy().GetRetryBackOff().GetMaxInterval().AsDuration(); got != 25*time.Millisecond {
		t.Errorf("rate limit: max_interval %v, want 25ms (the filter's 20ms timeout bounds the call)", got)
	}
}
