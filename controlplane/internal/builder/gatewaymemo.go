package builder

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	obj            metav1.Object
	reads          *reads
	routes         []gwIRRoute
	accepted, refs findings
	out            output
}

// gatewayMemo keeps the rules of each route from one build to the next
// (in Memo; the rules never see it), by the route's reference; they hold
// while the route and what they read have the same content (sameObject,
// docs/design/caches.md).
type gatewayMemo struct {
	grants     []*gwapiv1.ReferenceGrant
	backendTLS []*gwapiv1.BackendTLSPolicy
	rules      map[objects.Ref]*gatewayRules
	next       map[objects.Ref]*gatewayRules
}

// startGateway begins the Gateway API stage of a build: the previous
// build's rules hold only if the ReferenceGrants and the
// BackendTLSPolicies are the same (start has already dropped them if the
// global inputs changed). Either kind changes seldom; a change builds
// every route's rules again.
func (m *Memo) startGateway(s *snapshot) {
	if m == nil {
		return
	}
	if !slices.EqualFunc(m.gateway.grants, s.in.ReferenceGrants, sameObject) ||
		!slices.EqualFunc(m.gateway.backendTLS, s.in.BackendTLSPolicies, sameObject) {
		m.gateway.rules = nil
	}
	m.gateway.grants = slices.Clone(s.in.ReferenceGrants)
	m.gateway.backendTLS = slices.Clone(s.in.BackendTLSPolicies)
	m.gateway.next = map[objects.Ref]*gatewayRules{}
}

// finishGateway keeps this build's rules for the next: the routes gone
// are forgotten.
func (m *Memo) finishGateway() {
	if m == nil {
		return
	}
	m.gateway.rules, m.gateway.next = m.gateway.next, nil
}

// rules builds b's rules with build, or reuses the previous build's when
// they still hold. The findings and the output it reuses are never
// modified: b gets clipped copies to append to.
func (m *Memo) rules(b *routeBuild, build func(*routeBuild) []gwIRRoute) []gwIRRoute {
	if m == nil {
		return build(b)
	}
	ref := b.rt.ref
	if prev := m.gateway.rules[ref]; prev != nil && sameObject(prev.obj, b.rt.obj) && prev.reads.same(b.r.snap) {
		m.gateway.next[ref] = prev
		b.accepted, b.refs = slices.Clip(prev.accepted), slices.Clip(prev.refs)
		*b.out = output{status: b.out.status, clusters: slices.Clip(prev.out.clusters), secrets: slices.Clip(prev.out.secrets),
			clusterUses: slices.Clip(prev.out.clusterUses), secretUses: slices.Clip(prev.out.secretUses)}
		return prev.routes
	}
	rd := &reads{}
	shared := b.r
	b.r = &Resolver{snap: shared.snap, reads: rd}
	routes := build(b)
	b.r = shared
	m.gateway.next[ref] = &gatewayRules{obj: b.rt.obj, reads: rd, routes: routes,
		accepted: slices.Clip(b.accepted), refs: slices.Clip(b.refs), out: *b.out}
	return routes
}
