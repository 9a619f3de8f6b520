package gatewayapi

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gatewayRules is what building one route's rules gave: its IR routes and
// findings, what it resolved, and what it read. The rules of a route are
// a function of the route, of what they look up (Services, endpoints,
// recorded), of the ReferenceGrants, of the BackendTLSPolicies and of the
// global inputs; not of its
// Gateways, which attachment and placement (not memoized) decide on. At
// scale a change touches one HTTPRoute, and building the rules of the
// other thousands again was most of a rebuild.
type gatewayRules struct {
	obj           metav1.Object
	reads         *core.Reads
	routes        []gwIRRoute
	dropped, refs findings
	valid         int
	out           core.Output
}

// GatewayMemo keeps the rules of each route from one build to the next
// (in Memo; the rules never see it), by the route's reference; they hold
// while the route and what they read have the same content
// (core.SameObject, docs/design/caches.md).
type GatewayMemo struct {
	grants     []*gwapiv1.ReferenceGrant
	backendTLS string
	kept       map[objects.Ref]*gatewayRules
	next       map[objects.Ref]*gatewayRules
}

// start begins the Gateway API stage of a build: the previous
// build's rules hold only if the ReferenceGrants are the same and the
// BackendTLSPolicies make the same of their backends (backendTLS, their
// key: their CA certificates included), and start has not already
// dropped them because the global inputs changed. Either changes seldom;
// a change builds every route's rules again.
func (m *GatewayMemo) start(s *core.Snapshot, backendTLS string) {
	if m == nil {
		return
	}
	if !slices.EqualFunc(m.grants, s.In.ReferenceGrants, core.SameObject) ||
		m.backendTLS != backendTLS {
		m.kept = nil
	}
	m.grants = slices.Clone(s.In.ReferenceGrants)
	m.backendTLS = backendTLS
	m.next = map[objects.Ref]*gatewayRules{}
}

// finish keeps this build's rules for the next: the routes gone
// are forgotten.
func (m *GatewayMemo) finish() {
	if m == nil {
		return
	}
	m.kept, m.next = m.next, nil
}

// routeRules builds b's rules with build, or reuses the previous build's when
// they still hold. The findings and the output it reuses are never
// modified: b gets clipped copies to append to.
func (m *GatewayMemo) routeRules(b *routeBuild, build func(*routeBuild) []gwIRRoute) []gwIRRoute {
	if m == nil {
		return build(b)
	}
	ref := b.rt.ref
	if prev := m.kept[ref]; prev != nil && core.SameObject(prev.obj, b.rt.obj) && prev.reads.Same(b.R.Snap) {
		m.next[ref] = prev
		b.dropped, b.refs, b.valid = slices.Clip(prev.dropped), slices.Clip(prev.refs), prev.valid
		*b.Out = core.Output{Status: b.Out.Status, Clusters: slices.Clip(prev.out.Clusters), Secrets: slices.Clip(prev.out.Secrets),
			ClusterUses: slices.Clip(prev.out.ClusterUses), SecretUses: slices.Clip(prev.out.SecretUses)}
		return prev.routes
	}
	rd := &core.Reads{}
	shared := b.R
	b.R = &core.Resolver{Snap: shared.Snap, Reads: rd}
	routes := build(b)
	b.R = shared
	m.next[ref] = &gatewayRules{obj: b.rt.obj, reads: rd, routes: routes,
		dropped: slices.Clip(b.dropped), refs: slices.Clip(b.refs), valid: b.valid, out: *b.Out}
	return routes
}
