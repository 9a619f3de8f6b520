package gatewayapi

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// policyStatuses renders every policy's status.ancestors: one entry per
// distinct targetRef, whose Accepted condition says what happened there.
func (g *gatewayStage) policyStatuses() {
	if len(g.authPolicies.policies)+len(g.procPolicies.policies)+len(g.extPolicies) == 0 {
		return // nothing to render: do not index every route on each build
	}
	known := g.knownTargets()
	for _, set := range append([]policySet{g.authPolicies, g.procPolicies}, g.extPolicies...) {
		for i, p := range set.policies {
			for _, r := range p.targetRefs {
				ancestor := ancestorRef(r)
				if slices.ContainsFunc(p.st.GatewayAPI.Ancestors, func(a gwapiv1.PolicyAncestorStatus) bool { return sameParentRef(a.AncestorRef, ancestor) }) {
					continue // a duplicate targetRef (invalid, said once)
				}
				p.st.GatewayAPI.Ancestors = append(p.st.GatewayAPI.Ancestors, gwapiv1.PolicyAncestorStatus{
					AncestorRef:    ancestor,
					ControllerName: gwapiv1.GatewayController(g.controller),
					Conditions:     ancestorOverridden([]metav1.Condition{g.ancestorAccepted(set, i, p, r, known)}, p, r),
				})
			}
		}
	}
}

// ancestorAccepted is the Accepted condition of policy i of set at one of
// its targetRefs, the first that holds of: the target cannot be named or
// is not found (TargetNotFound), the policy is invalid (Invalid: it fails
// closed where it wins), another policy is older on the same target
// (Conflicted), else Accepted.
func (g *gatewayStage) ancestorAccepted(set policySet, i int, p *gwPolicy, r gwapiv1.LocalPolicyTargetReferenceWithSectionName, known knownTargets) metav1.Condition {
	gen := p.obj.GetGeneration()
	if u, ext := p.obj.(*unstructured.Unstructured); ext && core.IsProxyTargetRef(r) {
		// An extension's policy on an HTTPProxy (core/extpolicy.go).
		ok, reason, msg := g.R.Snap.ProxyPolicyAccepted(u, r)
		return cond(gwapiv1.PolicyConditionAccepted, ok, reason, msg, gen)
	}
	t := policyTarget{kind: r.Kind, namespace: p.ref.Namespace, name: string(r.Name), section: string(core.PtrValue(r.SectionName))}
	if !slices.Contains(p.targets, t) {
		return cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyReasonInvalid, p.invalid.message(), gen)
	}
	if missing := known.missing(t); missing != "" {
		return cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyReasonTargetNotFound, missing, gen)
	}
	if len(p.invalid) > 0 {
		return cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyReasonInvalid,
			p.invalid.message()+": the routes it applies to answer 500 until it is fixed", gen)
	}
	if p.refused != "" {
		return cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyConditionReason(status.ReasonOptOutForbidden), p.refused, gen)
	}
	if w, lost := set.index.LostTo(i, t); lost {
		winner := set.policies[w].ref
		return cond(gwapiv1.PolicyConditionAccepted, false, gwapiv1.PolicyReasonConflicted,
			fmt.Sprintf("%s %s/%s, older, is attached to the same target and is used instead", winner.Kind, winner.Namespace, winner.Name), gen)
	}
	return cond(gwapiv1.PolicyConditionAccepted, true, gwapiv1.PolicyReasonAccepted, "accepted", gen)
}

// ancestorOverridden adds to an ancestor's conditions, when a less
// specific target's overrides (GEP-713) apply to routes the policy would
// apply to there, the Overridden condition that says by which policy.
func ancestorOverridden(conds []metav1.Condition, p *gwPolicy, r gwapiv1.LocalPolicyTargetReferenceWithSectionName) []metav1.Condition {
	t := policyTarget{kind: r.Kind, namespace: p.ref.Namespace, name: string(r.Name), section: string(core.PtrValue(r.SectionName))}
	by, ok := p.overridden[t]
	if !ok {
		return conds
	}
	return append(conds, cond(status.TypePolicyOverridden, true, gwapiv1.PolicyConditionReason(status.ReasonOverriddenByPolicy),
		fmt.Sprintf("%s %s/%s, attached to a less specific target, sets overrides: it applies instead of this policy to the routes of this target it reaches", by.Kind, by.Namespace, by.Name), p.obj.GetGeneration()))
}

// ancestorRef names a target as its targetRef does.
func ancestorRef(r gwapiv1.LocalPolicyTargetReferenceWithSectionName) gwapiv1.ParentReference {
	group, kind := r.Group, r.Kind
	out := gwapiv1.ParentReference{Group: &group, Kind: &kind, Name: r.Name}
	if r.SectionName != nil {
		section := *r.SectionName
		out.SectionName = &section
	}
	return out
}

func sameParentRef(a, b gwapiv1.ParentReference) bool {
	return core.PtrValue(a.Group) == core.PtrValue(b.Group) && core.PtrValue(a.Kind) == core.PtrValue(b.Kind) && a.Name == b.Name &&
		core.PtrValue(a.SectionName) == core.PtrValue(b.SectionName)
}

// knownTargets are what a policy may find: every Gateway and route of the
// input (to tell "not found" from "not ours"), our Gateways with their
// listeners, and the routes attached to one of them with their rules'
// names.
type knownTargets struct {
	g        *gatewayStage
	gateways map[objects.Ref]bool
	rules    map[objects.Ref][]string
}

func (g *gatewayStage) knownTargets() knownTargets {
	k := knownTargets{g: g, gateways: map[objects.Ref]bool{}, rules: map[objects.Ref][]string{}}
	for _, gw := range g.R.Snap.In.Gateways {
		k.gateways[objects.Ref{Kind: objects.KindGateway, Namespace: gw.Namespace, Name: gw.Name}] = true
	}
	for _, r := range g.R.Snap.In.HTTPRoutes {
		k.rules[objects.Ref{Kind: objects.KindHTTPRoute, Namespace: r.Namespace, Name: r.Name}] = ruleNames(r.Spec.Rules, func(x gwapiv1.HTTPRouteRule) *gwapiv1.SectionName { return x.Name })
	}
	for _, r := range g.R.Snap.In.GRPCRoutes {
		k.rules[objects.Ref{Kind: objects.KindGRPCRoute, Namespace: r.Namespace, Name: r.Name}] = ruleNames(r.Spec.Rules, func(x gwapiv1.GRPCRouteRule) *gwapiv1.SectionName { return x.Name })
	}
	return k
}

// ruleNames are the names of a route's rules ("" for an unnamed one).
func ruleNames[R any](rules []R, name func(R) *gwapiv1.SectionName) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = string(core.PtrValue(name(r)))
	}
	return out
}

// missing says why t is not a target of ours ("" when it is).
func (k knownTargets) missing(t policyTarget) string {
	ref := objects.Ref{Kind: string(t.kind), Namespace: t.namespace, Name: t.name}
	what := fmt.Sprintf("%s %s/%s", t.kind, t.namespace, t.name)
	if t.kind == kindGateway {
		gw := k.g.byName[core.NsName(t.namespace, t.name)]
		switch {
		case !k.gateways[ref]:
			return what + " not found"
		case gw == nil:
			return what + " is not of a GatewayClass of this controller"
		case t.section != "" && !slices.ContainsFunc(gw.ownListeners(), func(l *gwListener) bool { return string(l.spec.Name) == t.section }):
			return fmt.Sprintf("%s has no listener named %q", what, t.section)
		}
		return ""
	}
	rules, found := k.rules[ref]
	_, ours := k.g.Out.Status[ref]
	switch {
	case !found:
		return what + " not found"
	case !ours:
		return what + " has no parent Gateway of this controller"
	case t.section != "" && !slices.Contains(rules, t.section):
		return fmt.Sprintf("%s has no rule named %q", what, t.section)
	}
	return ""
}
