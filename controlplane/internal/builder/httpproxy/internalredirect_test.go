package httpproxy

import (
	"reflect"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRouteInternalRedirect(t *testing.T) {
	three := uint32(3)
	for _, tc := range []struct {
		name   string
		in     *contourv1.HTTPInternalRedirectPolicy
		want   *ir.InternalRedirect
		errors int
	}{
		{name: "none"},
		{name: "defaults", in: &contourv1.HTTPInternalRedirectPolicy{}, want: &ir.InternalRedirect{CrossScheme: "Never"}},
		{name: "everything", in: &contourv1.HTTPInternalRedirectPolicy{MaxInternalRedirects: 3, RedirectResponseCodes: []contourv1.RedirectResponseCode{301, 308}, AllowCrossSchemeRedirect: "SafeOnly", DenyRepeatedRouteRedirect: true},
			want: &ir.InternalRedirect{MaxRedirects: &three, Codes: []uint32{301, 308}, CrossScheme: "SafeOnly", DenyRepeatedRoute: true}},
		{name: "bad code and mode", in: &contourv1.HTTPInternalRedirectPolicy{RedirectResponseCodes: []contourv1.RedirectResponseCode{300}, AllowCrossSchemeRedirect: "Maybe"}, errors: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			var rt Route
			routeInternalRedirect(&rt, tc.in, errs)
			if len(st.Errors) != tc.errors {
				t.Fatalf("errors %+v, want %d", st.Errors, tc.errors)
			}
			for _, e := range st.Errors {
				if e.Reason != status.ReasonInternalRedirectPolicyNotValid {
					t.Errorf("reason %s", e.Reason)
				}
			}
			if !reflect.DeepEqual(rt.InternalRedirect, tc.want) {
				t.Errorf("got %+v, want %+v", rt.InternalRedirect, tc.want)
			}
		})
	}
}
