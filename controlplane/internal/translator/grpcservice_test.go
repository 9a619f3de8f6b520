package translator

import (
	"testing"
	"time"
)

// Every call to an ExtensionService is sent again to another endpoint
// when no answer to it began; a rate-limit call only when it never reached
// a server (a reset one may have been counted).
func TestGrpcServiceRetries(t *testing.T) {
	timeout := time.Second
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ext_authz", grpcService("extension/auth/authz", "authz.auth", &timeout).GetRetryPolicy().GetRetryOn(), "connect-failure,refused-stream,reset"},
		{"ext_proc (no timeout)", grpcService("extension/p/p", "p.p", nil).GetRetryPolicy().GetRetryOn(), "connect-failure,refused-stream,reset"},
		{"rate limit", rateLimitService("extension/rl/rl", "rl.rl").GetRetryPolicy().GetRetryOn(), "connect-failure,refused-stream"},
	} {
		if tc.in != tc.want {
			t.Errorf("%s: retry_on = %q, want %q", tc.name, tc.in, tc.want)
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
