package httpproxy

import (
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRouteTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		in             *contourv1.TimeoutPolicy
		response, idle time.Duration // 0: unset
		wantErrors     []string
	}{
		{name: "none"},
		{name: "both", in: &contourv1.TimeoutPolicy{Response: "5s", Idle: "1m"}, response: 5 * time.Second, idle: time.Minute},
		{name: "a bad response timeout does not hide a bad idle one", in: &contourv1.TimeoutPolicy{Response: "soon", Idle: "-1s"},
			wantErrors: []string{`R: TimeoutPolicy.Response: "soon" is not a duration`, `R: TimeoutPolicy.Idle: "-1s" is negative`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			var rt Route
			routeTimeouts(&rt, tc.in, errs)
			if errs.invalid != (len(tc.wantErrors) > 0) || len(st.Errors) != len(tc.wantErrors) {
				t.Fatalf("errors %+v, want %q", st.Errors, tc.wantErrors)
			}
			for i, want := range tc.wantErrors {
				if got := st.Errors[i]; got.Reason != status.ReasonTimeoutPolicyNotValid || len(got.Message) < len(want) || got.Message[:len(want)] != want {
					t.Errorf("error %d = %+v, want %q", i, got, want)
				}
			}
			if d := durationOr0(rt.ResponseTimeout); d != tc.response {
				t.Errorf("response = %v, want %v", d, tc.response)
			}
			if d := durationOr0(rt.IdleTimeout); d != tc.idle {
				t.Errorf("idle = %v, want %v", d, tc.idle)
			}
		})
	}
}

func durationOr0(d *time.Duration) time.Duration { return core.PtrValue(d) }

func TestIdleConnection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *contourv1.TimeoutPolicy
		want    *time.Duration
		wantErr bool
	}{
		{name: "none"},
		{name: "unset", in: &contourv1.TimeoutPolicy{Response: "1s"}},
		{name: "set", in: &contourv1.TimeoutPolicy{IdleConnection: "90s"}, want: new(90 * time.Second)},
		{name: "infinity is none", in: &contourv1.TimeoutPolicy{IdleConnection: "infinity"}, want: new(time.Duration(0))},
		{name: "bad", in: &contourv1.TimeoutPolicy{IdleConnection: "often"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			got := idleConnection(tc.in, errs)
			if errs.invalid != tc.wantErr {
				t.Fatalf("errors %+v, want some: %v", st.Errors, tc.wantErr)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
