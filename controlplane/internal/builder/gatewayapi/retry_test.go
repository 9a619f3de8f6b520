package gatewayapi

import (
	"reflect"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// A rule's retry: attempts retries on its codes, always on connection
// errors and on tries without an answer (cut by backendRequest, the
// per-try timeout); what the API server refuses fails the rule.
func TestRuleRetry(t *testing.T) {
	ptr := func(i int) *int { return &i }
	dur := func(d gwapiv1.Duration) *gwapiv1.Duration { return &d }
	d := func(x time.Duration) *time.Duration { return &x }
	errorsOnly := []string{"connect-failure", "refused-stream", "reset"}
	for _, tc := range []struct {
		name    string
		in      gwapiv1.HTTPRouteRetry
		backend *time.Duration
		want    *ir.RetryPolicy
		wantErr bool
	}{
		{name: "empty: one retry on errors", want: &ir.RetryPolicy{RetryOn: errorsOnly, NumRetries: 1}},
		{name: "codes and attempts", in: gwapiv1.HTTPRouteRetry{Codes: []gwapiv1.HTTPRouteRetryStatusCode{500, 503}, Attempts: ptr(3)},
			want: &ir.RetryPolicy{RetryOn: append([]string{"retriable-status-codes"}, errorsOnly...), NumRetries: 3, RetriableStatusCodes: []uint32{500, 503}}},
		{name: "backendRequest bounds each try", in: gwapiv1.HTTPRouteRetry{Attempts: ptr(2)}, backend: d(2 * time.Second),
			want: &ir.RetryPolicy{RetryOn: errorsOnly, NumRetries: 2, PerTryTimeout: d(2 * time.Second)}},
		{name: "backoff", in: gwapiv1.HTTPRouteRetry{Backoff: dur("100ms")},
			want: &ir.RetryPolicy{RetryOn: errorsOnly, NumRetries: 1, Backoff: d(100 * time.Millisecond)}},
		{name: "a zero backoff is the default", in: gwapiv1.HTTPRouteRetry{Backoff: dur("0s")},
			want: &ir.RetryPolicy{RetryOn: errorsOnly, NumRetries: 1}},
		{name: "zero attempts", in: gwapiv1.HTTPRouteRetry{Attempts: ptr(0)}, wantErr: true},
		{name: "a success code", in: gwapiv1.HTTPRouteRetry{Codes: []gwapiv1.HTTPRouteRetryStatusCode{200}}, wantErr: true},
		{name: "a code beyond 599", in: gwapiv1.HTTPRouteRetry{Codes: []gwapiv1.HTTPRouteRetryStatusCode{600}}, wantErr: true},
		{name: "a backoff that is not a duration", in: gwapiv1.HTTPRouteRetry{Backoff: dur("1.5s")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ruleRetry(&tc.in, tc.backend)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Every status the API allows redirects with is served; another fails
// the rule.
func TestRedirectStatusCodes(t *testing.T) {
	for _, tc := range []struct {
		code    int
		wantErr bool
	}{{301, false}, {302, false}, {303, false}, {307, false}, {308, false}, {300, true}, {304, true}, {200, true}} {
		code := tc.code
		got, err := redirect(&gwapiv1.HTTPRequestRedirectFilter{StatusCode: &code})
		if (err != nil) != tc.wantErr {
			t.Errorf("statusCode %d: error %v, want one: %v", code, err, tc.wantErr)
		}
		if !tc.wantErr && got.StatusCode != code {
			t.Errorf("statusCode %d: got %d", code, got.StatusCode)
		}
	}
}
