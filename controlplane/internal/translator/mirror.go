package translator

import (
	"math"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// mirrors are a route's request_mirror_policies: Envoy sends a copy of
// the requests to each cluster and ignores the answers.
func mirrors(ms []ir.Mirror) []*routev3.RouteAction_RequestMirrorPolicy {
	var out []*routev3.RouteAction_RequestMirrorPolicy
	for _, m := range ms {
		p := &routev3.RouteAction_RequestMirrorPolicy{Cluster: m.Cluster}
		if m.Percent < 100 {
			p.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: mirrorFraction(m.Percent)}
		}
		out = append(out, p)
	}
	return out
}

// mirrorFraction is a percentage in millionths: fractional percentages
// (0.5%) are kept to four decimals.
func mirrorFraction(percent float64) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{
		Numerator:   uint32(math.Round(percent * 10000)),
		Denominator: typev3.FractionalPercent_MILLION,
	}
}
