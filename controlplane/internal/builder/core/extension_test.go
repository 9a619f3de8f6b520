package core

import (
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestExtensionProtocol(t *testing.T) {
	validation := &contourv1.UpstreamValidation{CACertificate: "ca", SubjectName: "auth"}
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.ExtensionServiceSpec
		want        ir.Protocol
		wantError   bool
		wantWarning bool
	}{
		{name: "plaintext by default", want: ir.H2C},
		{name: "TLS with a validation", spec: v1alpha1.ExtensionServiceSpec{UpstreamValidation: validation}, want: ir.H2},
		{name: "h2 without validation warns", spec: v1alpha1.ExtensionServiceSpec{Protocol: PtrTo("h2")}, want: ir.H2, wantWarning: true},
		{name: "h2c with a validation", spec: v1alpha1.ExtensionServiceSpec{Protocol: PtrTo("h2c"), UpstreamValidation: validation}, want: ir.H2C, wantError: true},
		{name: "an unknown protocol", spec: v1alpha1.ExtensionServiceSpec{Protocol: PtrTo("http/1.1")}, want: ir.H2C, wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			got := extensionProtocol(tc.spec, st)
			if got != tc.want || (len(st.Errors) > 0) != tc.wantError || (len(st.Warnings) > 0) != tc.wantWarning {
				t.Errorf("protocol %q, errors %+v, warnings %+v; want %q, error %v, warning %v", got, st.Errors, st.Warnings, tc.want, tc.wantError, tc.wantWarning)
			}
		})
	}
}

func TestExtensionLoadBalancer(t *testing.T) {
	hash := []contourv1.RequestHashPolicy{{HashSourceIP: true}}
	for _, tc := range []struct {
		policy                 *contourv1.LoadBalancerPolicy
		want                   string
		wantError, wantWarning bool
	}{
		{nil, "", false, false},
		{&contourv1.LoadBalancerPolicy{}, "", false, false},
		{&contourv1.LoadBalancerPolicy{Strategy: "Random"}, "Random", false, false},
		// Hashing has no effect on an ExtensionService: a warning, as Contour.
		{&contourv1.LoadBalancerPolicy{Strategy: "Cookie"}, "", false, true},
		{&contourv1.LoadBalancerPolicy{Strategy: "RequestHash", RequestHashPolicies: hash}, "", false, true},
		{&contourv1.LoadBalancerPolicy{Strategy: "Random", RequestHashPolicies: hash}, "Random", false, true},
		{&contourv1.LoadBalancerPolicy{Strategy: "Maglev"}, "", true, false},
	} {
		st := &status.Object{}
		got := extensionLoadBalancer(tc.policy, st)
		if got != tc.want || (len(st.Errors) > 0) != tc.wantError || (len(st.Warnings) > 0) != tc.wantWarning {
			t.Errorf("extensionLoadBalancer(%+v) = %q, errors %+v, warnings %+v", tc.policy, got, st.Errors, st.Warnings)
		}
		for _, w := range st.Warnings {
			if w.Reason != status.ReasonIgnoredField {
				t.Errorf("warning %+v, want the reason %s", w, status.ReasonIgnoredField)
			}
		}
	}
}

func TestExtensionTimeouts(t *testing.T) {
	for _, tc := range []struct {
		policy         *contourv1.TimeoutPolicy
		response, idle time.Duration
		errors         int
	}{
		{nil, 0, 0, 0},
		{&contourv1.TimeoutPolicy{Response: "3s", Idle: "1m"}, 3 * time.Second, time.Minute, 0},
		{&contourv1.TimeoutPolicy{Response: "x", Idle: "y"}, 0, 0, 2},
	} {
		st := &status.Object{}
		response, idle := extensionTimeouts(tc.policy, st)
		if PtrValue(response) != tc.response || PtrValue(idle) != tc.idle || len(st.Errors) != tc.errors {
			t.Errorf("extensionTimeouts(%+v) = %v, %v, errors %+v", tc.policy, PtrValue(response), PtrValue(idle), st.Errors)
		}
	}
}
