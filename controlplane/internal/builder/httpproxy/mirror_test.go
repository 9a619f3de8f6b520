package httpproxy

import (
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// The refusals of routeMirror (which come before resolving the service;
// the golden case httpproxy-mirror covers valid mirrors).
func TestRouteMirrorRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       contourv1.Service
		first   bool
		reasons []string
	}{
		{name: "second mirror", s: contourv1.Service{Name: "m", Port: 80, Mirror: true}, reasons: []string{status.ReasonOnlyOneMirror}},
		{name: "weight", s: contourv1.Service{Name: "m", Port: 80, Mirror: true, Weight: 101}, first: true, reasons: []string{status.ReasonMirrorNotValid}},
		{name: "negative weight", s: contourv1.Service{Name: "m", Port: 80, Mirror: true, Weight: -1}, first: true, reasons: []string{status.ReasonMirrorNotValid}},
		{name: "headers", s: contourv1.Service{Name: "m", Port: 80, Mirror: true, ResponseHeadersPolicy: &contourv1.HeadersPolicy{}}, first: true, reasons: []string{status.ReasonMirrorNotValid}},
		{name: "all at once", s: contourv1.Service{Name: "m", Port: 80, Mirror: true, Weight: 200, RequestHeadersPolicy: &contourv1.HeadersPolicy{}},
			reasons: []string{status.ReasonOnlyOneMirror, status.ReasonMirrorNotValid, status.ReasonMirrorNotValid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			_, ok := (&rootBuilder{}).routeMirror(&contourv1.HTTPProxy{}, 1, tc.s, tc.first, core.ClusterSettings{}, errs)
			if ok || len(st.Errors) != len(tc.reasons) {
				t.Fatalf("ok %v, errors %+v, want %v", ok, st.Errors, tc.reasons)
			}
			for i, r := range tc.reasons {
				if st.Errors[i].Reason != r {
					t.Errorf("error %d: %+v, want reason %s", i, st.Errors[i], r)
				}
			}
		})
	}
}
