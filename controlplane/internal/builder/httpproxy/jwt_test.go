package httpproxy

import (
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRouteJWT(t *testing.T) {
	scope := jwtScope{names: map[string]bool{"idp": true, "other": true}, def: "idp"}
	for _, tc := range []struct {
		name       string
		scope      jwtScope
		route      contourv1.Route
		want       string
		wantReason string
	}{
		{name: "the default", scope: scope, want: "idp"},
		{name: "no default", scope: jwtScope{names: map[string]bool{"idp": true}}, want: ""},
		{name: "no providers", want: ""},
		{name: "require", scope: scope, route: contourv1.Route{JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: "other"}}, want: "other"},
		{name: "disabled", scope: scope, route: contourv1.Route{JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}}, want: ""},
		{name: "disabled and insecure", scope: scope, route: contourv1.Route{PermitInsecure: true, JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}}, want: ""},
		{name: "both", scope: scope, route: contourv1.Route{JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: "idp", Disabled: true}}, wantReason: status.ReasonInvalidJWTVerificationPolicy},
		{name: "unknown", scope: scope, route: contourv1.Route{JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: "nope"}}, wantReason: status.ReasonJWTProviderNotDefined},
		{name: "require without providers", route: contourv1.Route{JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: "idp"}}, wantReason: status.ReasonJWTProviderNotDefined},
		{name: "the default on an insecure route", scope: scope, route: contourv1.Route{PermitInsecure: true}, wantReason: status.ReasonJWTVerificationNotPermitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "Spec.Routes[0]"}
			var rt Route
			routeJWT(&rt, &tc.route, tc.scope, errs)
			if tc.wantReason != "" {
				if !errs.invalid || len(st.Errors) != 1 || st.Errors[0].Reason != tc.wantReason || st.Errors[0].Type != contourv1.ConditionTypeJWTVerificationError {
					t.Fatalf("errors %+v, want one %s", st.Errors, tc.wantReason)
				}
				return
			}
			if errs.invalid || rt.JWTProvider != tc.want {
				t.Errorf("provider %q (errors %+v), want %q", rt.JWTProvider, st.Errors, tc.want)
			}
		})
	}
}

func TestJWKSDurations(t *testing.T) {
	timeout, cache, _, err := jwksDurations(contourv1.RemoteJWKS{})
	if err != nil || timeout.String() != "1s" || cache != nil {
		t.Errorf("defaults: %v %v %v", timeout, cache, err)
	}
	for in, reason := range map[contourv1.RemoteJWKS]string{
		{Timeout: "0s"}:        status.ReasonRemoteJWKSTimeoutInvalid,
		{Timeout: "later"}:     status.ReasonRemoteJWKSTimeoutInvalid,
		{CacheDuration: "-1s"}: status.ReasonRemoteJWKSCacheDurationInvalid,
	} {
		if _, _, got, err := jwksDurations(in); err == nil || got != reason || !strings.Contains(err.Error(), "positive duration") {
			t.Errorf("%+v: %v (%s), want %s", in, err, got, reason)
		}
	}
}
