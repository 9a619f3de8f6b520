package httpproxy

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routeMirror resolves service j of a route of p, a mirror, into a mirror
// policy: the service gets a copy of the route's requests (all of them,
// or weight percent when the weight is 1-100), whose answers are
// discarded. As Contour, a route has at most one mirror (first says
// whether this is the first); a mirror's headers and cookie policies would not apply
// (Envoy mirrors the request as the route sends it), so they are errors.
func (b *rootBuilder) routeMirror(p *contourv1.HTTPProxy, j int, s contourv1.Service, first bool, cs core.ClusterSettings, errs *routeErrors) (ir.Mirror, bool) {
	where := servicePlaces.at(j)
	ok := true
	if !first {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonOnlyOneMirror, "%s: only one service per route may be nominated as mirror", where)
		ok = false
	}
	if s.Weight < 0 || s.Weight > 100 {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonMirrorNotValid, "%s: the weight of a mirror is the percentage of requests mirrored: %d is not in the range 0-100 (0 mirrors all)", where, s.Weight)
		ok = false
	}
	if s.RequestHeadersPolicy != nil || s.ResponseHeadersPolicy != nil || len(s.CookieRewritePolicies) > 0 {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonMirrorNotValid, "%s: a mirror has no requestHeadersPolicy, responseHeadersPolicy or cookieRewritePolicies: it gets the request as the route sends it, and its response is discarded", where)
		ok = false
	}
	if !ok {
		return ir.Mirror{}, false
	}
	c, ok := b.routeService(p, j, s, cs, errs)
	if !ok {
		return ir.Mirror{}, false
	}
	m := ir.Mirror{Cluster: c.Cluster, Percent: 100}
	if s.Weight > 0 {
		m.Percent = float64(s.Weight)
	}
	return m, true
}
