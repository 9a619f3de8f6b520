package httpproxy

import (
	"reflect"
	"testing"
	"time"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestLocalRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *contourv1.LocalRateLimitPolicy
		want    *ir.LocalRateLimit
		wantErr string
	}{
		{name: "none"},
		{name: "everything", in: &contourv1.LocalRateLimitPolicy{Requests: 10, Unit: "minute", Burst: 5, ResponseStatusCode: 503,
			ResponseHeadersToAdd: []contourv1.HeaderValue{{Name: "x-limited", Value: "yes"}, {Name: "retry-after", Value: "60"}}},
			want: &ir.LocalRateLimit{Requests: 10, Burst: 5, Interval: time.Minute, Status: 503,
				ResponseHeaders: []ir.HeaderValue{{Name: "x-limited", Value: "yes"}, {Name: "retry-after", Value: "60"}}}},
		{name: "hour", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "hour"}, want: &ir.LocalRateLimit{Requests: 1, Interval: time.Hour}},
		{name: "no requests", in: &contourv1.LocalRateLimitPolicy{Unit: "second"}, wantErr: "local.requests must be at least 1"},
		{name: "unit", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "day"}, wantErr: `local.unit "day"`},
		{name: "overflow", in: &contourv1.LocalRateLimitPolicy{Requests: 1 << 31, Burst: 1 << 31, Unit: "second"}, wantErr: "plus local.burst"},
		{name: "status Envoy lacks", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "second", ResponseStatusCode: 460}, wantErr: "responseStatusCode 460"},
		{name: "status not an error", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "second", ResponseStatusCode: 200}, wantErr: "responseStatusCode 200"},
		{name: "header name", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "second", ResponseHeadersToAdd: []contourv1.HeaderValue{{Name: "x y", Value: "v"}}}, wantErr: "responseHeadersToAdd: invalid add header"},
		{name: "header value", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "second", ResponseHeadersToAdd: []contourv1.HeaderValue{{Name: "x", Value: "a\nb"}}}, wantErr: "line break"},
		{name: "duplicate header", in: &contourv1.LocalRateLimitPolicy{Requests: 1, Unit: "second", ResponseHeadersToAdd: []contourv1.HeaderValue{{Name: "x", Value: "a"}, {Name: "X", Value: "b"}}}, wantErr: `duplicate header "X"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localRateLimit(tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestEnvoyErrorStatuses: the statuses a rate limit may answer with are
// the 4xx and 5xx of Envoy's StatusCode enumeration, which Envoy checks.
func TestEnvoyErrorStatuses(t *testing.T) {
	want := map[uint32]bool{}
	for code := range typev3.StatusCode_name {
		if code >= 400 && code <= 599 {
			want[uint32(code)] = true
		}
	}
	if !reflect.DeepEqual(envoyErrorStatuses, want) {
		t.Errorf("envoyErrorStatuses = %v, Envoy's are %v", envoyErrorStatuses, want)
	}
}
