package translator

import (
	"testing"
	"time"
)

// Every call to an ExtensionService is sent again to another endpoint
// when it never reached a server, and only then.
func TestGrpcServiceRetries(t *testing.T) {
	timeout := time.Second
	for _, tc := range []struct {
		name string
		in   func() string
	}{
		{"ext_authz", func() string {
			return grpcService("extension/auth/authz", "authz.auth", &timeout).GetRetryPolicy().GetRetryOn()
		}},
		{"no timeout (rate limit)", func() string { return grpcService("extension/rl/rl", "rl.rl", nil).GetRetryPolicy().GetRetryOn() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in(); got != "connect-failure,refused-stream" {
				t.Errorf("retry_on = %q, want connect-failure,refused-stream (nothing a server may have begun)", got)
			}
		})
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
