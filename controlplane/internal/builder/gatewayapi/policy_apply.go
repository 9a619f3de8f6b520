package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// withPolicies are the routes of one attachment (through listener l)
// with the policies that win on them applied, and the policies applied
// (the host's origins, so that Envoy's rejection of what they made reaches
// them). A route with a policy is a copy: a route attached through
// several listeners may get different policies on each.
func (g *gatewayStage) withPolicies(l *gwListener, routes []gwIRRoute) ([]gwIRRoute, []objects.Ref) {
	if g.noPolicies() {
		return routes, nil // nothing to look up per route
	}
	out := make([]gwIRRoute, len(routes))
	var used []objects.Ref
	for i, r := range routes {
		out[i] = r
		at := routeAt{
			gwNamespace: l.gw.gw.Namespace, gwName: l.gw.gw.Name, listener: policyListener(l),
			routeKind: r.kind, namespace: r.obj.GetNamespace(), route: r.obj.GetName(), rule: ruleName(r),
		}
		auth, proc := g.authPolicies.forRoute(at), g.procPolicies.forRoute(at)
		if auth == nil && proc == nil && len(g.extPolicies) == 0 {
			continue
		}
		x := *r.route
		extUsed, extOK := g.withExtensionPolicies(&x, r, at)
		if auth == nil && proc == nil && len(extUsed) == 0 {
			continue
		}
		used = append(used, extUsed...)
		invalid := !extOK
		for _, p := range []*gwPolicy{auth, proc} {
			if p != nil {
				used = append(used, p.ref)
				x.Origins = x.Origins.Union(ir.Origins{p.ref})
				invalid = invalid || len(p.invalid) > 0
			}
		}
		applyAuthPolicy(&x, auth)
		applyProcPolicy(&x, proc)
		if invalid {
			// Its policy cannot be applied: the route must not be
			// served without it (nor with a less specific one).
			x = failClosed(x)
		}
		if x.Auth != nil {
			g.Out.ClusterUses.Add(x.Auth.Cluster, auth.ref)
		}
		if x.Processor != nil {
			g.Out.ClusterUses.Add(x.Processor.Cluster, proc.ref)
		}
		out[i].route = &x
	}
	return out, used
}

// applyAuthPolicy makes p authorize x: its own filter (Route.Auth, the
// HCM's, global one included, is off there) with p's context alone (no
// merging with the global context: the winner applies alone), or no
// authorization at all for the opt-out.
func applyAuthPolicy(x *ir.Route, p *gwPolicy) {
	switch {
	case p == nil:
	case p.disabled:
		x.Auth, x.AuthDisabled, x.AuthContext = nil, true, nil
	case p.auth != nil:
		x.Auth, x.AuthDisabled, x.AuthContext = p.auth, false, p.authContext
	}
}

// applyProcPolicy makes p process x: its own filter (Route.Processor, the
// HCM's is off there), or no processing at all for the opt-out.
func applyProcPolicy(x *ir.Route, p *gwPolicy) {
	switch {
	case p == nil:
	case p.disabled:
		x.Processor, x.ExtProc = nil, &ir.ExtProcPerRoute{Disabled: true}
	case p.proc != nil:
		x.Processor, x.ExtProc = p.proc, nil
	}
}

// ruleName is the name of the rule r was made from; "" when unnamed.
func ruleName(r gwIRRoute) string {
	var name *gwapiv1.SectionName
	switch o := r.obj.(type) {
	case *gwapiv1.HTTPRoute:
		name = o.Spec.Rules[r.rule].Name
	case *gwapiv1.GRPCRoute:
		name = o.Spec.Rules[r.rule].Name
	}
	return string(core.PtrValue(name))
}

// hoistHostFilters gives a TLS host's own HCM the authorization (the
// processor) that every one of its routes names, instead of one more
// filter enabled route by route: the same behaviour, a simpler
// configuration (the common case of a policy on a Gateway or a listener).
// The routes are copied: they may be shared.
func hoistHostFilters(vh *ir.SecureVirtualHost) {
	if len(vh.Routes) == 0 {
		return
	}
	auth, proc := vh.Routes[0].Auth, vh.Routes[0].Processor
	for _, r := range vh.Routes[1:] {
		if r.Auth != auth {
			auth = nil
		}
		if r.Processor != proc {
			proc = nil
		}
	}
	if auth == nil && proc == nil {
		return
	}
	if auth != nil {
		vh.Auth = auth
	}
	if proc != nil {
		vh.ExtProc = proc
	}
	routes := make([]*ir.Route, len(vh.Routes))
	for i, r := range vh.Routes {
		x := *r
		if auth != nil {
			x.Auth = nil
		}
		if proc != nil {
			x.Processor = nil
		}
		routes[i] = &x
	}
	vh.Routes = routes
}

// noPolicies: no policy of any kind exists.
func (g *gatewayStage) noPolicies() bool {
	return len(g.authPolicies.policies) == 0 && len(g.procPolicies.policies) == 0 && len(g.extPolicies) == 0
}
