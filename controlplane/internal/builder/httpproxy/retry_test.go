package httpproxy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRouteRetry(t *testing.T) {
	ms := 250 * time.Millisecond
	for _, tc := range []struct {
		name       string
		in         *contourv1.RetryPolicy
		want       *ir.RetryPolicy
		wantErrors []string
		wantWarn   bool
	}{
		{name: "none"},
		{name: "defaults: 5xx, one retry", in: &contourv1.RetryPolicy{}, want: &ir.RetryPolicy{RetryOn: []string{"5xx"}, NumRetries: 1}},
		{name: "-1 disables retries", in: &contourv1.RetryPolicy{NumRetries: -1}, want: &ir.RetryPolicy{RetryOn: []string{"5xx"}}},
		{name: "everything", in: &contourv1.RetryPolicy{NumRetries: 3, PerTryTimeout: "250ms", RetryOn: []contourv1.RetryOn{"retriable-status-codes", "unavailable", "unavailable"}, RetriableStatusCodes: []uint32{503}},
			want: &ir.RetryPolicy{RetryOn: []string{"retriable-status-codes", "unavailable"}, NumRetries: 3, PerTryTimeout: &ms, RetriableStatusCodes: []uint32{503}}},
		{name: "codes without their condition warn", in: &contourv1.RetryPolicy{RetriableStatusCodes: []uint32{503}},
			want: &ir.RetryPolicy{RetryOn: []string{"5xx"}, NumRetries: 1, RetriableStatusCodes: []uint32{503}}, wantWarn: true},
		{name: "every error", in: &contourv1.RetryPolicy{NumRetries: -5, PerTryTimeout: "-1s", RetryOn: []contourv1.RetryOn{"retriable-status-codes", "often"}, RetriableStatusCodes: []uint32{42}},
			wantErrors: []string{"R: RetryPolicy.Count: -5", "R: RetryPolicy.PerTryTimeout:", `R: RetryPolicy.RetryOn[1]: "often"`, "R: RetryPolicy.RetriableStatusCodes[0]: 42"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			var rt Route
			routeRetry(&rt, tc.in, errs)
			if errs.invalid != (len(tc.wantErrors) > 0) || len(st.Errors) != len(tc.wantErrors) {
				t.Fatalf("errors %+v, want %q", st.Errors, tc.wantErrors)
			}
			for i, want := range tc.wantErrors {
				if got := st.Errors[i]; got.Reason != status.ReasonRetryPolicyNotValid || !strings.HasPrefix(got.Message, want) {
					t.Errorf("error %d = %+v, want %q", i, got, want)
				}
			}
			if (len(st.Warnings) > 0) != tc.wantWarn {
				t.Errorf("warnings %+v, want some: %v", st.Warnings, tc.wantWarn)
			}
			if len(tc.wantErrors) == 0 && !reflect.DeepEqual(rt.Retry, tc.want) {
				t.Errorf("retry = %+v, want %+v", rt.Retry, tc.want)
			}
		})
	}
}
