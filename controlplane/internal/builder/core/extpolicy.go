package core

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// The extensions' policies (objects of a registered policyResources kind)
// attach with spec.targetRefs to the Gateway API's objects (the Gateway
// API stage's business) and to HTTPProxies: {group: projectcontour.io,
// kind: HTTPProxy, name} in the policy's namespace, as a Gateway API
// LocalPolicyTargetReference. A policy on an HTTPProxy applies to every
// route written in its spec.routes, wherever they are included. Of two
// policies of one kind on one HTTPProxy, the older wins (PolicyIndex) and
// the other is Conflicted. They are indexed here, once per build, so that
// each root reads its HTTPProxies' winners through its Resolver (and its
// memo sees them change), and the policies' status says the same, with or
// without Gateway API objects.

// ProxyPolicy is an extension's policy that targets HTTPProxies.
type ProxyPolicy struct {
	Ref objects.Ref
	// Resource is the policy as its owner receives it (Policy set).
	Resource ir.ExtensionResource
	obj      *unstructured.Unstructured
	// targets are the HTTPProxies it targets; refused says why each of
	// its other HTTPProxy targetRefs (by name) is not a target.
	targets []types.NamespacedName
	refused map[gwapiv1.ObjectName]string
}

// proxyPolicySet is the policies of one kind that target HTTPProxies,
// with their index.
type proxyPolicySet struct {
	policies []*ProxyPolicy
	index    PolicyIndex[types.NamespacedName]
}

// IsProxyTargetRef reports whether a targetRef names an HTTPProxy.
func IsProxyTargetRef(r gwapiv1.LocalPolicyTargetReferenceWithSectionName) bool {
	return r.Group == contourGroup && r.Kind == KindHTTPProxy
}

const contourGroup = "projectcontour.io"

// ExtensionPolicyTargetRefs decodes an extension policy's spec.targetRefs
// (the rest of its spec is the extension's); problem says why they
// cannot be ("" when they can).
func ExtensionPolicyTargetRefs(u *unstructured.Unstructured) (refs []gwapiv1.LocalPolicyTargetReferenceWithSectionName, problem string) {
	raw, found, err := unstructured.NestedSlice(u.Object, "spec", "targetRefs")
	switch {
	case err != nil:
		return nil, "spec.targetRefs: must be a list of references (group, kind, name, sectionName)"
	case !found || len(raw) == 0:
		return nil, "spec.targetRefs: required: the Gateways, listeners, routes, rules or HTTPProxies the policy attaches to"
	}
	var decoded struct {
		Refs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"refs"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"refs": raw}, &decoded); err != nil {
		return decoded.Refs, fmt.Sprintf("spec.targetRefs: %v", err)
	}
	return decoded.Refs, ""
}

// EachPolicyKind calls each with the objects of exts (sorted by group and
// kind, as Set.Extensions is) of each kind of kinds, one kind at a time:
// policies of one kind are indexed together, apart from other kinds'.
func EachPolicyKind(exts []*unstructured.Unstructured, kinds map[schema.GroupKind]bool, each func([]*unstructured.Unstructured)) {
	for i := 0; i < len(exts); {
		gk := exts[i].GroupVersionKind().GroupKind()
		j := i + 1
		for j < len(exts) && exts[j].GroupVersionKind().GroupKind() == gk {
			j++
		}
		if kinds[gk] {
			each(exts[i:j])
		}
		i = j
	}
}

// indexProxyPolicies indexes the policies of the registered policy kinds
// that target HTTPProxies.
func (s *Snapshot) indexProxyPolicies() {
	EachPolicyKind(s.In.Extensions, s.Opts.Extensions.Policies, func(objs []*unstructured.Unstructured) {
		var ps []*ProxyPolicy
		for _, u := range objs {
			if p := newProxyPolicy(u); p != nil {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			return
		}
		cs := make([]PolicyCandidate[types.NamespacedName], len(ps))
		for i, p := range ps {
			cs[i] = PolicyCandidate[types.NamespacedName]{Obj: p.obj, Targets: p.targets}
		}
		s.proxyPolicies = append(s.proxyPolicies, proxyPolicySet{policies: ps, index: NewPolicyIndex(cs)})
	})
}

// newProxyPolicy is u as a policy on HTTPProxies; nil when it targets
// none. A policy whose targetRefs do not decode or that cannot be encoded
// targets none (the Gateway API stage says why, in its status).
func newProxyPolicy(u *unstructured.Unstructured) *ProxyPolicy {
	refs, problem := ExtensionPolicyTargetRefs(u)
	if problem != "" || !slices.ContainsFunc(refs, IsProxyTargetRef) {
		return nil
	}
	js, err := ExtensionJSON(u)
	if err != nil {
		return nil
	}
	gk := u.GroupVersionKind().GroupKind()
	p := &ProxyPolicy{
		Ref:      objects.Ref{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()},
		Resource: ir.ExtensionResource{Group: gk.Group, Kind: gk.Kind, JSON: js, Policy: true},
		obj:      u,
	}
	for _, r := range refs {
		if !IsProxyTargetRef(r) {
			continue
		}
		if r.SectionName != nil && *r.SectionName != "" {
			if p.refused == nil {
				p.refused = map[gwapiv1.ObjectName]string{}
			}
			p.refused[r.Name] = "an HTTPProxy has no sections: sectionName must not be set"
			continue
		}
		if t := NsName(u.GetNamespace(), string(r.Name)); !slices.Contains(p.targets, t) {
			p.targets = append(p.targets, t)
		}
	}
	return p
}

// ProxyPolicies are the extensions' policies that win on the HTTPProxy
// k, one of each kind at most, in the order of the kinds: what its
// routes give PostRouteModify.
func (r *Resolver) ProxyPolicies(k types.NamespacedName) []*ProxyPolicy {
	ps := r.Snap.proxyPoliciesOf(k)
	if r.Reads != nil {
		r.Reads.proxyPolicies = append(r.Reads.proxyPolicies, dep[[]*ProxyPolicy]{k, ps})
	}
	return ps
}

func (s *Snapshot) proxyPoliciesOf(k types.NamespacedName) []*ProxyPolicy {
	var out []*ProxyPolicy
	for _, set := range s.proxyPolicies {
		if i, ok := set.index.Winner(k); ok {
			out = append(out, set.policies[i])
		}
	}
	return out
}

// sameProxyPolicies reports whether a root reads the same policies: the
// same objects, or differing only in status (which we write).
func sameProxyPolicies(a, b []*ProxyPolicy) bool {
	return slices.EqualFunc(a, b, func(x, y *ProxyPolicy) bool { return SameObject(x.obj, y.obj) })
}

// ProxyPolicyAccepted is the Accepted condition of the extension policy
// u at its targetRef r, an HTTPProxy: not found among the HTTPProxies of
// this controller's class (TargetNotFound), not a target (Invalid),
// another policy of its kind is older there (Conflicted), else Accepted.
func (s *Snapshot) ProxyPolicyAccepted(u *unstructured.Unstructured, r gwapiv1.LocalPolicyTargetReferenceWithSectionName) (ok bool, reason gwapiv1.PolicyConditionReason, message string) {
	t := NsName(u.GetNamespace(), string(r.Name))
	what := fmt.Sprintf("HTTPProxy %s/%s", t.Namespace, t.Name)
	for _, set := range s.proxyPolicies {
		i := slices.IndexFunc(set.policies, func(p *ProxyPolicy) bool { return p.obj == u })
		if i < 0 {
			continue
		}
		p := set.policies[i]
		if why, refused := p.refused[r.Name]; refused {
			return false, gwapiv1.PolicyReasonInvalid, fmt.Sprintf("%s: %s", what, why)
		}
		if s.Proxies[t] == nil {
			return false, gwapiv1.PolicyReasonTargetNotFound, what + " not found"
		}
		if w, lost := set.index.LostTo(i, t); lost {
			winner := set.policies[w].Ref
			return false, gwapiv1.PolicyReasonConflicted, fmt.Sprintf("%s %s/%s, older, is attached to the same target and is used instead", winner.Kind, winner.Namespace, winner.Name)
		}
		return true, gwapiv1.PolicyReasonAccepted, "accepted"
	}
	// Not indexed: its targetRefs do not decode, or it does not encode.
	_, problem := ExtensionPolicyTargetRefs(u)
	return false, gwapiv1.PolicyReasonInvalid, fmt.Sprintf("%s: %s", what, cmp.Or(problem, "the policy cannot be encoded"))
}

// HasExtensionPolicies reports whether the input holds an object of a
// registered policy kind.
func (s *Snapshot) HasExtensionPolicies() bool {
	kinds := s.Opts.Extensions.Policies
	return len(kinds) > 0 && slices.ContainsFunc(s.In.Extensions, func(u *unstructured.Unstructured) bool { return kinds[u.GroupVersionKind().GroupKind()] })
}
