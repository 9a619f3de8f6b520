package gatewayapi

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// routeBuild is the build of one HTTPRoute or GRPCRoute's rules: what
// its rules resolve goes to its own output, merged into the stage's only
// when the route is served (a route attached nowhere adds no cluster).
type routeBuild struct {
	core.Stage
	grants     grantIndex
	backendTLS backendTLSIndex
	rt         *gwRoute
	// grpc: the route is a GRPCRoute (its backends speak h2c).
	grpc bool
	// stream: its connections are proxied (TLSRoute, TCPRoute), or its
	// datagrams (UDPRoute): its backends get the bytes as they come,
	// whatever their Service's protocol.
	stream bool
	// accepted: the findings of the route itself (it is not served);
	// dropped: of its rules (each answers 500 or leaves out what the
	// finding names), in Accepted when no rule is left valid and in
	// PartiallyInvalid otherwise; refs: of ResolvedRefs. For every parent.
	accepted, dropped, refs findings
	// valid is the number of rules served as written.
	valid int
	// webSocket are the clusters of the Service ports whose appProtocol
	// is kubernetes.io/ws (serviceBackend).
	webSocket map[string]bool
}

// buildRoute builds one route of either kind: its parents (none of ours:
// nothing to do, no status), its rules (rules), its status, and its
// attachments to the ready listeners. A route with an error of its own
// (an unknown field, an invalid hostname) is not served at all; an
// invalid rule answers 500 (see the rules).
func (g *gatewayStage) buildRoute(rt *gwRoute, rules func(*routeBuild) []gwIRRoute) {
	parents := g.parents(rt)
	if len(parents) == 0 {
		return
	}
	st, complaints := g.gatewayAPIStatus(rt.ref.Kind, rt.ref.Namespace, rt.ref.Name, rt.obj.GetGeneration())
	out := core.NewOutput()
	b := &routeBuild{Stage: core.Stage{R: g.R, Out: &out}, grants: g.grants, backendTLS: g.backendTLS, rt: rt, grpc: rt.kind == kindGRPCRoute, stream: rt.kind == kindTLSRoute || rt.kind == kindTCPRoute || rt.kind == kindUDPRoute, accepted: decodeFindings(complaints)}
	for i, h := range rt.hostnames {
		if err := gatewayHostnameValid(string(h)); err != nil {
			b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "spec.hostnames[%d]: %v", i, err)
		}
	}
	served := len(b.accepted) == 0
	var routes []gwIRRoute
	if served {
		routes = g.memo.routeRules(b, rules)
	}
	attached := false
	for _, p := range parents {
		st.GatewayAPI.Parents = append(st.GatewayAPI.Parents, g.routeParentStatus(p, b, rt.obj.GetGeneration()))
		if !served || len(p.problems) > 0 {
			continue
		}
		parent := routeParent{st.GatewayAPI, len(st.GatewayAPI.Parents) - 1}
		for i, l := range p.listeners {
			if !l.ready() {
				continue
			}
			for _, h := range p.hosts[i] {
				g.attachments = append(g.attachments, attachment{listener: l, host: h, routes: routes, origin: rt.ref, parent: parent})
				attached = true
			}
		}
	}
	if attached {
		g.Out.Clusters = append(g.Out.Clusters, out.Clusters...)
		g.Out.ClusterUses = append(g.Out.ClusterUses, out.ClusterUses...)
		// The CA bundles of the BackendTLSPolicies of its backends.
		g.Out.Secrets = append(g.Out.Secrets, out.Secrets...)
		g.Out.SecretUses = append(g.Out.SecretUses, out.SecretUses...)
	}
}

// ruleWhere names a rule in messages: its index, and its name if it has
// one.
func ruleWhere(i int, name *gwapiv1.SectionName) string {
	if name != nil && *name != "" {
		return fmt.Sprintf("spec.rules[%d] (%s)", i, *name)
	}
	return fmt.Sprintf("spec.rules[%d]", i)
}

// rule builds one rule with build, counting it valid when it adds no
// finding to dropped.
func (b *routeBuild) rule(build func() []gwIRRoute) []gwIRRoute {
	n := len(b.dropped)
	out := build()
	if len(b.dropped) == n {
		b.valid++
	}
	return out
}

// newRoute is an IR route of the route being built, with the global
// authorization's policy (Gateway listeners are authorized as HTTPProxy
// virtual hosts are: the global authorization, when configured).
func (b *routeBuild) newRoute() ir.Route {
	x := ir.Route{Origins: ir.Origins{b.rt.ref}}
	if global := b.R.Global(); global.Auth != nil {
		x.AuthDisabled = global.AuthPolicy.Disabled
		x.AuthContext = global.AuthPolicy.Context
	}
	return x
}

// failClosed makes a rule answer 500 instead of what it says, keeping its
// match: a rule with a filter or backend that cannot be honoured must not
// be served without it, nor fall through to another rule. It keeps its
// name and origin, but goes to no extension hook.
func failClosed(x ir.Route) ir.Route {
	return ir.Route{
		PathKind: x.PathKind, Path: x.Path, Headers: x.Headers, QueryParams: x.QueryParams,
		DirectResponse: &ir.DirectResponse{Status: 500},
		AuthDisabled:   x.AuthDisabled, AuthContext: x.AuthContext, Origins: x.Origins,
		Name: x.Name, Origin: x.Origin,
	}
}

// ruleRoutes are the IR routes of rule i of the route being built, of
// either kind: its action under each of its matches (a rule without
// matches matches every request). A rule whose action cannot be honoured
// (ok false) answers 500; a match that cannot be built is left out (it
// cannot even answer 500), with the reason in Accepted.
func ruleRoutes[M any](b *routeBuild, i int, ruleName *gwapiv1.SectionName, where string, action ir.Route, ok bool, matches []M, match func(M) (ir.Route, error)) []gwIRRoute {
	if len(matches) == 0 {
		matches = make([]M, 1)
	}
	out := make([]gwIRRoute, 0, len(matches))
	for j, m := range matches {
		mx, err := match(m)
		if err != nil {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.matches[%d]: %v (the match is not served)", where, j, err)
			continue
		}
		x := withMatch(action, mx)
		if ok && needsPrefixMatch(x) && x.PathKind != ir.PathPrefix {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.matches[%d]: ReplacePrefixMatch needs a PathPrefix match: it answers 500", where, j)
			x = failClosed(x)
		}
		if !ok {
			x = failClosed(x)
		}
		withExtensionContext(b, &x, i, j, ruleName)
		out = append(out, gwIRRoute{route: &x, obj: b.rt.obj, kind: b.rt.kind, rule: i, match: j})
	}
	return out
}

// withMatch is action (a rule's) under one of its matches.
func withMatch(action, match ir.Route) ir.Route {
	action.PathKind, action.Path, action.Headers, action.QueryParams = match.PathKind, match.Path, match.Headers, match.QueryParams
	return action
}
