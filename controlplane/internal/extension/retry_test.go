package extension

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// A call that fails with a retryable code is retried, within its timeout,
// when the registration says so (and by default under the EnvoyGateway
// dialect, as Envoy Gateway does); without retries its first failure is
// the hook's.
func TestRetry(t *testing.T) {
	res := globalAuth(t)
	for _, tc := range []struct {
		name     string
		retry    *Retry
		failures int
	}{
		{"no retry", nil, 1},
		{"3 attempts", &Retry{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, BackoffMultiplier: 2, Codes: []codes.Code{codes.Unavailable}}, 0},
		{"another code", &Retry{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, BackoffMultiplier: 2, Codes: []codes.Code{codes.ResourceExhausted}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			addr := sdktest.Listen(t, &sdk.Server{TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
				if calls.Add(1) <= 2 {
					return nil, status.Error(codes.Unavailable, "warming up")
				}
				return &v1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(), Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}, nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostTranslateModify}, Retry: tc.retry, Timeout: 10 * time.Second})
			if _, failures := r.Apply(t.Context(), res, Refs{}); len(failures) != tc.failures {
				t.Errorf("%d failures (%v) after %d calls, want %d", len(failures), failures, calls.Load(), tc.failures)
			}
		})
	}
}

func TestRetryConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
		retry            *Retry
	}{
		{"defaults", "retry: {}", "", &DefaultRetry},
		{"codes", "retry: {maxAttempts: 2, retryableStatusCodes: [unavailable, RESOURCE_EXHAUSTED]}", "",
			&Retry{MaxAttempts: 2, InitialBackoff: DefaultRetry.InitialBackoff, MaxBackoff: DefaultRetry.MaxBackoff, BackoffMultiplier: 2, Codes: []codes.Code{codes.Unavailable, codes.ResourceExhausted}}},
		{"too many attempts", "retry: {maxAttempts: 9}", "retry.maxAttempts: 9 is not between 2 and 5", nil},
		{"bad code", "retry: {retryableStatusCodes: [SOMETIMES]}", `"SOMETIMES" is not a gRPC status code`, nil},
		{"bad backoff", "retry: {initialBackoff: soon}", "retry.initialBackoff: must be a positive duration", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte("extensions:\n- {name: x, address: 127.0.0.1:1, hooks: [PostTranslateModify], "+tc.yaml+"}\n"), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			regs, err := FromConfig(c)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := regs[0].Retry
			if got.MaxAttempts != tc.retry.MaxAttempts || got.InitialBackoff != tc.retry.InitialBackoff || got.BackoffMultiplier != tc.retry.BackoffMultiplier || len(got.Codes) != len(tc.retry.Codes) {
				t.Errorf("retry %+v, want %+v", got, tc.retry)
			}
			if sc := got.serviceConfig(); !strings.Contains(sc, `"UNAVAILABLE"`) {
				t.Errorf("service config %s names no UNAVAILABLE", sc)
			}
		})
	}
	if (Registration{Dialect: DialectEnvoyGateway}).withDefaults().Retry == nil {
		t.Error("an EnvoyGateway registration without retry gets none; want Envoy Gateway's default")
	}
}
