package gatewayapi

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// gwPolicy is one ExtAuthPolicy or ExtProcPolicy, checked on its own:
// what it does to the routes it wins on.
type gwPolicy struct {
	ref objects.Ref
	obj metav1.Object
	st  *status.Object
	// targetRefs as written (status.ancestors has one entry per distinct
	// one); targets are those of a kind it may name, for the index.
	targetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName
	targets    []policyTarget
	// invalid says why the policy cannot be applied: the routes it wins
	// on fail closed (they answer 500), never served more openly than it
	// asks.
	invalid findings
	// disabled: the opt-out (disabled: true, or an ExtAuthPolicy's
	// authPolicy.disabled): no authorization (processing) on its routes,
	// the global one included.
	disabled bool
	// auth and authContext are an ExtAuthPolicy's server and context;
	// proc an ExtProcPolicy's processor. Their Origins are the policy.
	auth        *ir.ExtAuth
	authContext map[string]string
	proc        *ir.ExtProc
	// ext is an extension's policy, as its owner receives it.
	ext *ir.ExtensionResource
	// override: the settings are the policy's overrides (GEP-713).
	override bool
	// refused says why the configuration file refuses the policy's
	// opt-out (globalExtAuth.optOut: forbidden): it wins nowhere, and its
	// routes keep the authorization they would have without it.
	refused string
	// overridden are the targets where the policy would apply to a route
	// but a less specific target's overrides do, with that policy.
	overridden map[policyTarget]objects.Ref
}

// policySet is the policies of one kind with their index.
type policySet struct {
	policies []*gwPolicy
	index    policyIndex
}

func newPolicySet(ps []*gwPolicy) policySet {
	cs := make([]policyCandidate, len(ps))
	for i, p := range ps {
		cs[i] = policyCandidate{Obj: p.obj, Targets: p.targets, Override: p.override}
		if p.refused != "" {
			cs[i].Targets = nil // a refused opt-out wins nowhere
		}
	}
	return policySet{policies: ps, index: newPolicyIndex(cs)}
}

// forRoute is the policy that applies at at; nil for none. The policies
// its overrides replace there are told so (overridden).
func (s policySet) forRoute(at routeAt) *gwPolicy {
	i, overridden, ok := s.index.Resolve(at.targets())
	if !ok {
		return nil
	}
	p := s.policies[i]
	for _, o := range overridden {
		q := s.policies[o.Policy]
		if q.overridden == nil {
			q.overridden = map[policyTarget]objects.Ref{}
		}
		q.overridden[o.Target] = p.ref
	}
	return p
}

// newGWPolicy starts the checks of a policy: its decoding and its
// targetRefs (the CRD's rules, which objects read from files did not go
// through).
func (g *gatewayStage) newGWPolicy(kind string, obj metav1.Object, refs []gwapiv1.LocalPolicyTargetReferenceWithSectionName) *gwPolicy {
	st, complaints := g.gatewayAPIStatus(kind, obj.GetNamespace(), obj.GetName(), obj.GetGeneration())
	p := &gwPolicy{ref: st.Ref, obj: obj, st: st, targetRefs: refs, invalid: decodeFindings(complaints)}
	p.targets, p.invalid = policyTargets(obj.GetNamespace(), refs, p.invalid)
	return p
}

// policyTargets are the targets of targetRefs a policy may name, with the
// CRD's complaints about the others added to invalid.
func policyTargets(namespace string, refs []gwapiv1.LocalPolicyTargetReferenceWithSectionName, invalid findings) ([]policyTarget, findings) {
	var out []policyTarget
	whole, sections := map[policyTarget]bool{}, map[policyTarget]bool{}
	for i, r := range refs {
		if r.Group != gatewayGroup || (r.Kind != kindGateway && r.Kind != kindHTTPRoute && r.Kind != kindGRPCRoute) {
			invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.targetRefs[%d]: targetRefs may name only a Gateway, an HTTPRoute or a GRPCRoute of group gateway.networking.k8s.io", i)
			continue
		}
		t := policyTarget{kind: r.Kind, namespace: namespace, name: string(r.Name), section: string(core.PtrValue(r.SectionName))}
		object := policyTarget{kind: t.kind, namespace: namespace, name: t.name}
		switch {
		case slices.Contains(out, t):
			invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.targetRefs[%d]: sectionName must be unique when targetRefs includes 2 or more references to the same target", i)
			continue
		case t.section == "" && sections[object], t.section != "" && whole[object]:
			invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.targetRefs[%d]: sectionName must be specified when targetRefs includes 2 or more references to the same target", i)
		}
		if t.section == "" {
			whole[object] = true
		} else {
			sections[object] = true
		}
		out = append(out, t)
	}
	return out, invalid
}

// extAuthPolicy checks one ExtAuthPolicy: its settings (its overrides,
// or its defaults), a server with the rules of an HTTPProxy's
// authorization (authServer), or its opt-out, which stands alone (the
// CRD's rules) and which the configuration file may forbid.
func (g *gatewayStage) extAuthPolicy(in *gatewayv1alpha1.ExtAuthPolicy) *gwPolicy {
	p := g.newGWPolicy(objects.KindExtAuthPolicy, in, in.Spec.TargetRefs)
	s, override := in.Spec.Settings()
	p.override = override
	where := settingsWhere(in.Spec.Defaults != nil, override)
	flat := gatewayv1alpha1.ExtAuthPolicySettings{ExtensionServiceRef: in.Spec.ExtensionServiceRef, AuthPolicy: in.Spec.AuthPolicy,
		ResponseTimeout: in.Spec.ResponseTimeout, FailOpen: in.Spec.FailOpen, WithRequestBody: in.Spec.WithRequestBody}
	if settingsGivenTwice(in.Spec.Defaults != nil, override, authServerSettings(flat) || in.Spec.Disabled) {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "the settings are given once: at the top of spec, in defaults or in overrides")
	}
	switch {
	case s.Disabled:
		if authServerSettings(s) {
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "disabled: true switches authorization off and takes no extensionRef, responseTimeout, failOpen, withRequestBody or authPolicy")
		}
		p.disabled = true
	case s.ExtensionServiceRef == nil || s.ExtensionServiceRef.Name == "":
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "extensionRef is required unless disabled is true")
	case !g.policyMayUse(objects.KindExtAuthPolicy, in.Namespace, *s.ExtensionServiceRef, where+"extensionRef", &p.invalid):
	default:
		a := s.AuthorizationServer()
		auth, _, msg := core.AuthServer(g.R, a, in.Namespace, core.AuthFields{Ref: where + "extensionRef", Timeout: where + "responseTimeout"})
		if auth == nil {
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "%s", msg)
			break
		}
		auth.Origins = ir.Origins{p.ref}
		p.auth = auth
		if ap := a.AuthPolicy; ap != nil {
			p.disabled, p.authContext = ap.Disabled, ap.Context
		}
	}
	if p.disabled && g.R.Opts().GlobalExtAuth.OptOutForbidden() {
		p.refused = "the policy switches authorization off, which the configuration file forbids (globalExtAuth.optOut: forbidden): its routes keep the authorization they have without it"
	}
	return p
}

// authServerSettings reports whether s sets any of a server's settings
// (all but disabled).
func authServerSettings(s gatewayv1alpha1.ExtAuthPolicySettings) bool {
	return s.ExtensionServiceRef != nil || s.ResponseTimeout != "" || s.FailOpen || s.WithRequestBody != nil || s.AuthPolicy != nil
}

// settingsWhere is the prefix of a policy's settings' fields in messages.
func settingsWhere(defaults, override bool) string {
	switch {
	case override:
		return "spec.overrides."
	case defaults:
		return "spec.defaults."
	}
	return "spec."
}

// settingsGivenTwice reports whether a policy gives its settings in more
// than one of defaults, overrides and the top of its spec (flat).
func settingsGivenTwice(defaults, overrides, flat bool) bool {
	n := 0
	for _, set := range []bool{defaults, overrides, flat} {
		if set {
			n++
		}
	}
	return n > 1
}

// extProcPolicy checks one ExtProcPolicy: its processor with the rules of
// an HTTPProxy's virtualhost.extProc.processor, or its opt-out, which
// stands alone.
func (g *gatewayStage) extProcPolicy(in *gatewayv1alpha1.ExtProcPolicy) *gwPolicy {
	p := g.newGWPolicy(objects.KindExtProcPolicy, in, in.Spec.TargetRefs)
	s, override := in.Spec.Settings()
	p.override = override
	where := settingsWhere(in.Spec.Defaults != nil, override) + "processor"
	if settingsGivenTwice(in.Spec.Defaults != nil, override, in.Spec.Processor != nil || in.Spec.Disabled) {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "the settings are given once: at the top of spec, in defaults or in overrides")
	}
	switch {
	case s.Disabled:
		if s.Processor != nil {
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "disabled: true switches processing off and takes no processor")
		}
		p.disabled = true
	case s.Processor == nil:
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "processor is required unless disabled is true")
	default:
		if errs := apicheck.CheckExtProc(s.Processor, where, true); len(errs) > 0 {
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "%s", strings.Join(errs, "; "))
			break
		}
		if gs := s.Processor.GRPCService; gs != nil && !g.policyMayUse(objects.KindExtProcPolicy, in.Namespace, gs.ExtensionServiceRef, where+".grpcService.extensionRef", &p.invalid) {
			break
		}
		proc, problem := core.ExtProc(g.R, s.Processor, in.Namespace, where)
		if problem != "" {
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "%s.grpcService.extensionRef: %s", where, problem)
			break
		}
		proc.Origins = ir.Origins{p.ref}
		p.proc = proc
	}
	return p
}

// policyMayUse reports whether a policy of kind in namespace may use the
// ExtensionService ref names: one of its own namespace, or of another
// whose ReferenceGrant allows the policy's kind and namespace (as for a
// route's backends), so that an ExtensionService's owner chooses whose
// authorization server or processor it is (a processor may add
// credentials to the requests it sees). When not, invalid says why.
func (g *gatewayStage) policyMayUse(kind, namespace string, ref contourv1.ExtensionServiceReference, where string, invalid *findings) bool {
	ns := cmp.Or(ref.Namespace, namespace)
	if ns == namespace || g.grants.permits(gatewayv1alpha1.GroupName, gwapiv1.Kind(kind), namespace, contourGroup, kindExtensionService, core.NsName(ns, ref.Name)) {
		return true
	}
	invalid.add(string(gwapiv1.PolicyReasonInvalid), "%s: ExtensionService %s/%s is in another namespace and no ReferenceGrant there allows the %s objects of namespace %s to use it", where, ns, ref.Name, kind, namespace)
	return false
}

// buildPolicies checks every policy and indexes each kind's.
func (g *gatewayStage) buildPolicies() {
	auth := make([]*gwPolicy, len(g.R.Snap.In.ExtAuthPolicies))
	for i, p := range g.R.Snap.In.ExtAuthPolicies {
		auth[i] = g.extAuthPolicy(p)
	}
	proc := make([]*gwPolicy, len(g.R.Snap.In.ExtProcPolicies))
	for i, p := range g.R.Snap.In.ExtProcPolicies {
		proc[i] = g.extProcPolicy(p)
	}
	g.authPolicies, g.procPolicies = newPolicySet(auth), newPolicySet(proc)
	g.buildExtensionPolicies()
}
