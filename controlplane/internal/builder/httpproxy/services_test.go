package httpproxy

import (
	"math"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestServiceWeights(t *testing.T) {
	svc := func(weights ...int64) []contourv1.Service {
		var out []contourv1.Service
		for _, w := range weights {
			out = append(out, contourv1.Service{Name: "s", Port: 80, Weight: w})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		services []contourv1.Service
		allZero  bool
		wantErr  bool
	}{
		{"none", nil, true, false},
		{"no weights", svc(0, 0), true, false},
		{"one weighted", svc(0, 10), false, false},
		{"negative counts as zero", svc(-5, 0), true, false},
		{"at the limit", svc(math.MaxUint32), false, false},
		{"over the limit", svc(math.MaxUint32, 1), false, true},
		{"one over the limit counts as the limit", svc(math.MaxUint32 + 10), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allZero, err := serviceWeights(tc.services)
			if allZero != tc.allZero || (err != nil) != tc.wantErr {
				t.Errorf("serviceWeights = %v, %v; want %v, error %v", allZero, err, tc.allZero, tc.wantErr)
			}
		})
	}
}

func TestServiceProtocol(t *testing.T) {
	for _, tc := range []struct {
		in      *string
		want    ir.Protocol
		wantErr bool
	}{
		{nil, ir.HTTP1, false},
		{core.PtrTo("h2"), ir.H2, false},
		{core.PtrTo("h2c"), ir.H2C, false},
		{core.PtrTo("tls"), ir.TLS, false},
		{core.PtrTo("http"), "", true},
		{core.PtrTo(""), "", true},
	} {
		got, err := core.ServiceProtocol(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("serviceProtocol(%v) = %q, %v; want %q, error %v", core.PtrValue(tc.in), got, err, tc.want, tc.wantErr)
		}
	}
}
