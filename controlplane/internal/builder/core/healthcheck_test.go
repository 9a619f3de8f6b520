package core

import (
	"math"
	"testing"
	"time"

	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestHTTPHealthCheck(t *testing.T) {
	defaults := func(h *ir.HTTPHealthCheck) *ir.HealthCheck {
		return &ir.HealthCheck{HTTP: h, Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2}
	}
	for _, tc := range []struct {
		name    string
		in      *contourv1.HTTPHealthCheckPolicy
		want    *ir.HealthCheck
		wantErr string
	}{
		{name: "none"},
		{name: "defaults", in: &contourv1.HTTPHealthCheckPolicy{Path: "/healthz"}, want: defaults(&ir.HTTPHealthCheck{Path: "/healthz", Host: "contour-envoy-healthcheck"})},
		{name: "everything", in: &contourv1.HTTPHealthCheckPolicy{Path: "/r", Host: "h", IntervalSeconds: 10, TimeoutSeconds: 20, UnhealthyThresholdCount: 1, HealthyThresholdCount: 7,
			ExpectedStatuses: []contourv1.HTTPStatusRange{{Start: 200, End: 400}}},
			want: &ir.HealthCheck{HTTP: &ir.HTTPHealthCheck{Path: "/r", Host: "h", ExpectedStatuses: []ir.StatusRange{{Start: 200, End: 400}}}, Interval: 10 * time.Second, Timeout: 20 * time.Second, UnhealthyThreshold: 1, HealthyThreshold: 7}},
		{name: "relative path", in: &contourv1.HTTPHealthCheckPolicy{Path: "healthz"}, wantErr: "must start with /"},
		{name: "query", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h?x"}, wantErr: "not allowed"},
		{name: "host", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h", Host: "a\nb"}, wantErr: "not allowed"},
		{name: "interval", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h", TimeoutSeconds: -1}, wantErr: "negative"},
		{name: "threshold", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h", HealthyThresholdCount: -1}, wantErr: "healthyThresholdCount"},
		{name: "empty range", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h", ExpectedStatuses: []contourv1.HTTPStatusRange{{Start: 200, End: 200}}}, wantErr: "expectedStatuses[0]"},
		{name: "range beyond 600", in: &contourv1.HTTPHealthCheckPolicy{Path: "/h", ExpectedStatuses: []contourv1.HTTPStatusRange{{Start: 200, End: 601}}}, wantErr: "expectedStatuses[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HTTPHealthCheck(tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestClusterSettingsKeyHealthChecks(t *testing.T) {
	hc := func(path string) *ir.HealthCheck {
		return &ir.HealthCheck{HTTP: &ir.HTTPHealthCheck{Path: path}, Interval: time.Second}
	}
	a := ClusterSettings{HealthCheck: hc("/a")}.Key()
	if b := (ClusterSettings{HealthCheck: hc("/a")}).Key(); a != b {
		t.Errorf("equal checks, different keys: %q, %q", a, b)
	}
	for _, other := range []ClusterSettings{{HealthCheck: hc("/b")}, {HealthCheck: hc("/a"), HealthPort: 9000}, {}} {
		if other.Key() == a {
			t.Errorf("%+v has the key of another check: %q", other, a)
		}
	}
}

func TestTCPHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *contourv1.TCPHealthCheckPolicy
		want    *ir.HealthCheck
		wantErr string
	}{
		{name: "none"},
		{name: "defaults", in: &contourv1.TCPHealthCheckPolicy{},
			want: &ir.HealthCheck{TCP: true, Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2}},
		{name: "everything", in: &contourv1.TCPHealthCheckPolicy{IntervalSeconds: 10, TimeoutSeconds: 3, UnhealthyThresholdCount: 4, HealthyThresholdCount: 1},
			want: &ir.HealthCheck{TCP: true, Interval: 10 * time.Second, Timeout: 3 * time.Second, UnhealthyThreshold: 4, HealthyThreshold: 1}},
		{name: "interval", in: &contourv1.TCPHealthCheckPolicy{IntervalSeconds: -1}, wantErr: "negative"},
		{name: "timeout", in: &contourv1.TCPHealthCheckPolicy{TimeoutSeconds: -1}, wantErr: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TCPHealthCheck(tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestGRPCHealthCheck: an ExtensionService's gRPC health checks take the
// same timing rules as the HTTP and TCP ones (healthTiming): an absurd
// interval is clamped, not overflowed into a negative duration.
func TestGRPCHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *v1alpha1.GRPCHealthCheckPolicy
		want    *ir.HealthCheck
		wantErr string
	}{
		{name: "none"},
		{name: "defaults", in: &v1alpha1.GRPCHealthCheckPolicy{ServiceName: "auth"},
			want: &ir.HealthCheck{ServiceName: "auth", Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2}},
		{name: "huge interval", in: &v1alpha1.GRPCHealthCheckPolicy{IntervalSeconds: math.MaxInt64},
			want: &ir.HealthCheck{Interval: math.MaxInt32 * time.Second, Timeout: 2 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2}},
		{name: "negative", in: &v1alpha1.GRPCHealthCheckPolicy{TimeoutSeconds: -1}, wantErr: "negative"},
		{name: "timeout past interval", in: &v1alpha1.GRPCHealthCheckPolicy{IntervalSeconds: 1, TimeoutSeconds: 2}, wantErr: "must not exceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := healthCheck(tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}
