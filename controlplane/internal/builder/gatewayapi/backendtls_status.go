package gatewayapi

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// backendTLSStatuses renders each BackendTLSPolicy's status: one ancestor
// per Gateway of ours whose routes use a Service port it applies to, with
// its Accepted and ResolvedRefs conditions.
func (g *gatewayStage) backendTLSStatuses() {
	if len(g.backendTLS.policies) == 0 {
		return
	}
	for _, r := range g.R.Snap.In.HTTPRoutes {
		var refs []gwapiv1.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			for _, br := range rule.BackendRefs {
				refs = append(refs, br.BackendObjectReference)
			}
		}
		g.backendTLSAncestors(r.Namespace, r.Spec.ParentRefs, refs)
	}
	for _, r := range g.R.Snap.In.GRPCRoutes {
		var refs []gwapiv1.BackendObjectReference
		for _, rule := range r.Spec.Rules {
			for _, br := range rule.BackendRefs {
				refs = append(refs, br.BackendObjectReference)
			}
		}
		g.backendTLSAncestors(r.Namespace, r.Spec.ParentRefs, refs)
	}
	for _, p := range g.backendTLS.policies {
		st, _ := g.gatewayAPIStatus(objects.KindBackendTLSPolicy, p.obj.Namespace, p.obj.Name, p.obj.Generation)
		conds := p.conditions()
		for _, a := range p.ancestors {
			st.GatewayAPI.Ancestors = append(st.GatewayAPI.Ancestors, gwapiv1.PolicyAncestorStatus{
				AncestorRef:    a,
				ControllerName: gwapiv1.GatewayController(g.controller),
				Conditions:     slices.Clone(conds),
			})
		}
	}
}

// backendTLSAncestors adds the Gateways of ours among a route's parentRefs
// to the ancestors of the policies that target its Service backends (a
// Conflicted one too: its status says so where it would have applied).
func (g *gatewayStage) backendTLSAncestors(namespace string, parents []gwapiv1.ParentReference, refs []gwapiv1.BackendObjectReference) {
	gateways := g.ourGateways(namespace, parents)
	if len(gateways) == 0 {
		return
	}
	for _, ref := range refs {
		if orDefault(ref.Group, "") != "" || orDefault(ref.Kind, kindService) != kindService || ref.Port == nil {
			continue
		}
		key := core.NsName(string(orDefault(ref.Namespace, gwapiv1.Namespace(namespace))), string(ref.Name))
		svc := g.R.Snap.Services[key]
		if svc == nil {
			continue
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == int32(*ref.Port) })
		if i < 0 {
			continue
		}
		for _, p := range g.backendTLS.targeting(key, svc.Spec.Ports[i].Name) {
			for _, gw := range gateways {
				if !slices.ContainsFunc(p.ancestors, func(a gwapiv1.ParentReference) bool { return sameParentRef(a, gw) && *a.Namespace == *gw.Namespace }) {
					p.ancestors = append(p.ancestors, gw)
				}
			}
		}
	}
}

// ourGateways are the Gateways of ours among the parentRefs of a route of
// namespace, as ancestor references.
func (g *gatewayStage) ourGateways(namespace string, parents []gwapiv1.ParentReference) []gwapiv1.ParentReference {
	var gateways []gwapiv1.ParentReference
	for _, pr := range parents {
		ns := string(orDefault(pr.Namespace, gwapiv1.Namespace(namespace)))
		if orDefault(pr.Group, gatewayGroup) != gatewayGroup || orDefault(pr.Kind, kindGateway) != kindGateway || g.byName[core.NsName(ns, string(pr.Name))] == nil {
			continue
		}
		gateways = append(gateways, gwapiv1.ParentReference{Group: core.PtrTo(gatewayGroup), Kind: core.PtrTo(kindGateway),
			Namespace: core.PtrTo(gwapiv1.Namespace(ns)), Name: pr.Name})
	}
	return gateways
}

// conditions are the policy's Accepted and ResolvedRefs conditions (the
// same at every ancestor: what it makes of a backend does not depend on
// the Gateway).
func (p *btlsPolicy) conditions() []metav1.Condition {
	gen := p.obj.Generation
	accepted := cond(gwapiv1.PolicyConditionAccepted, true, gwapiv1.PolicyReasonAccepted, "accepted", gen)
	switch {
	case len(p.invalid) > 0:
		accepted = cond(gwapiv1.PolicyConditionAccepted, false, p.invalid.reason(), p.invalid.message()+": the backends it applies to answer 500 until it is fixed", gen)
	case p.lost != "":
		accepted = cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyReasonConflicted, "BackendTLSPolicy "+p.lost+", older, targets the same Service port and is used instead", gen)
	}
	return []metav1.Condition{accepted,
		goodWhenEmpty(gwapiv1.BackendTLSPolicyConditionResolvedRefs, p.refs, gwapiv1.BackendTLSPolicyReasonResolvedRefs, "every CA certificate reference resolves", gen)}
}
