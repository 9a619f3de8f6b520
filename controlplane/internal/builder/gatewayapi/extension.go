package gatewayapi

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// extensionRef adds the object an ExtensionRef filter names to x's
// extension resources; false, with the reason in ResolvedRefs, when no
// extension registered its kind or it does not exist: the rule then
// answers 500 (the API: a filter that cannot be resolved is not skipped).
func (b *routeBuild) extensionRef(ref *gwapiv1.LocalObjectReference, where string, x *ir.Route) bool {
	if ref == nil {
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: %v: the rule answers 500", where, errFilterConfig)
		return false
	}
	gk := schema.GroupKind{Group: string(ref.Group), Kind: string(ref.Kind)}
	if !b.R.Opts().Extensions.Resources[gk] {
		b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s: ExtensionRef %s %q: no extension registered this kind (extensions[].resources of the configuration file): the rule answers 500", where, gk, ref.Name)
		return false
	}
	u := b.R.ExtensionObject(core.ExtKey{GK: gk, Namespace: b.rt.ref.Namespace, Name: string(ref.Name)})
	if u == nil {
		b.refs.add(string(gwapiv1.RouteReasonBackendNotFound), "%s: ExtensionRef %s %q: not found in namespace %q: the rule answers 500", where, gk, ref.Name, b.rt.ref.Namespace)
		return false
	}
	js, err := core.ExtensionJSON(u)
	if err != nil {
		b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s: ExtensionRef %s %q: %v: the rule answers 500", where, gk, ref.Name, err)
		return false
	}
	if x.Extension == nil {
		x.Extension = &ir.RouteExtension{}
	}
	x.Extension.Resources = append(x.Extension.Resources, ir.ExtensionResource{Group: gk.Group, Kind: gk.Kind, JSON: js})
	return true
}

// withExtensionContext completes the extension part of x, the route of
// match j of rule i: where it came from, and the name its Envoy route
// gets (the hooks find it by it). When extensions are registered, every
// route gets its name and origin (the metadata of its Envoy route);
// otherwise routes without extension resources are left unnamed.
func withExtensionContext(b *routeBuild, x *ir.Route, i, j int, ruleName *gwapiv1.SectionName) {
	withBackendResources(b, x)
	anyExt := b.R.Opts().Extensions.Any
	if x.Extension == nil && !anyExt {
		return
	}
	ref, rule := b.rt.ref, string(core.PtrValue(ruleName))
	x.Name = fmt.Sprintf("%s/%s/%s/rule/%d/match/%d", strings.ToLower(ref.Kind), ref.Namespace, ref.Name, i, j)
	if anyExt {
		x.Origin = &ir.RouteOrigin{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, SectionName: rule}
	}
	if x.Extension != nil {
		e := *x.Extension
		e.Kind, e.Namespace, e.Name, e.RuleName, e.RuleIndex = ref.Kind, ref.Namespace, ref.Name, rule, i
		x.Extension = &e
	}
}

// withBackendResources gives x, a route that sends to backends of an
// extension's kinds, those objects as its extension resources (after its
// ExtensionRef filters' objects), so that the owner's PostRouteModify
// sees them, as Envoy Gateway sends them; their clusters go to
// PostClusterModify as well.
func withBackendResources(b *routeBuild, x *ir.Route) {
	var add []ir.ExtensionResource
	for _, wc := range x.Clusters {
		if c := b.R.Snap.Clusters[wc.Cluster]; c != nil && c.Extension != nil {
			add = append(add, *c.Extension)
		}
	}
	if len(add) == 0 {
		return
	}
	e := ir.RouteExtension{}
	if x.Extension != nil {
		e = *x.Extension
	}
	e.Resources = append(slices.Clip(e.Resources), add...)
	x.Extension = &e
}

// The extensions' policies: objects of a registered policy kind attach to
// Gateways, listeners, routes and rules with spec.targetRefs, as
// ExtAuthPolicies do (gateway_policy.go): of one kind, the most specific
// attachment wins, and of two on the same target the older. The winner of
// each kind goes to the owner's PostRouteModify with the routes it
// reaches; status.ancestors says where it is attached.

// buildExtensionPolicies checks every object of the registered policy
// kinds and indexes each kind's (sorted by group and kind, as
// Set.Extensions is).
func (g *gatewayStage) buildExtensionPolicies() {
	core.EachPolicyKind(g.R.Snap.In.Extensions, g.R.Opts().Extensions.Policies, func(objs []*unstructured.Unstructured) {
		ps := make([]*gwPolicy, len(objs))
		for i, u := range objs {
			ps[i] = g.extensionPolicy(u)
		}
		g.extPolicies = append(g.extPolicies, newPolicySet(ps))
	})
}

// extensionPolicy checks one policy of an extension: only its targetRefs;
// the rest of its spec is the extension's. Its HTTPProxy targetRefs are
// the core's (core/extpolicy.go): not targets here, but ancestors in its
// status.
func (g *gatewayStage) extensionPolicy(u *unstructured.Unstructured) *gwPolicy {
	refs, problem := core.ExtensionPolicyTargetRefs(u)
	ours := slices.DeleteFunc(slices.Clone(refs), core.IsProxyTargetRef)
	p := g.newGWPolicy(extensionKindRef(u), u, ours)
	p.targetRefs = refs
	if problem != "" {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "%s", problem)
	}
	js, err := core.ExtensionJSON(u)
	if err != nil {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "%v", err)
	}
	gk := u.GroupVersionKind().GroupKind()
	p.ext = &ir.ExtensionResource{Group: gk.Group, Kind: gk.Kind, JSON: js, Policy: true}
	return p
}

// extensionKindRef is the kind an extension's object has in objects.Ref
// (statuses): its kind (registration refuses kinds named as ours).
func extensionKindRef(u *unstructured.Unstructured) string { return u.GetKind() }

// withExtensionPolicies gives x, the route r attached at at, the winning
// policy of each extension policy kind: x's extension resources get them
// (after its ExtensionRefs), its name the attachment (a route attached
// through several listeners may get different ones). False when one of
// them is invalid: the route must then answer 500. used are the policies.
func (g *gatewayStage) withExtensionPolicies(x *ir.Route, r gwIRRoute, at routeAt) (used []objects.Ref, ok bool) {
	ok = true
	var add []ir.ExtensionResource
	for _, set := range g.extPolicies {
		p := set.forRoute(at)
		if p == nil {
			continue
		}
		used = append(used, p.ref)
		ok = ok && len(p.invalid) == 0
		add = append(add, *p.ext)
	}
	if len(add) == 0 {
		return nil, true
	}
	e := ir.RouteExtension{Kind: string(r.kind), Namespace: r.obj.GetNamespace(), Name: r.obj.GetName(), RuleName: at.rule, RuleIndex: r.rule}
	if x.Extension != nil {
		e = *x.Extension
	}
	e.Resources = append(slices.Clip(e.Resources), add...)
	x.Extension = &e
	x.Origins = x.Origins.Union(ir.NewOrigins(used...))
	x.Name = fmt.Sprintf("%s/%s/%s/rule/%d/match/%d/via/%s/%s/%s", strings.ToLower(e.Kind), e.Namespace, e.Name, r.rule, r.match, at.gwNamespace, at.gwName, at.listener)
	return used, ok
}

// validExtensionPolicies are the extensions' valid policies, in the order
// of g.extPolicies.
func (g *gatewayStage) validExtensionPolicies() []ir.ExtensionResource {
	var out []ir.ExtensionResource
	for _, set := range g.extPolicies {
		for _, p := range set.policies {
			if len(p.invalid) == 0 && p.ext != nil {
				out = append(out, *p.ext)
			}
		}
	}
	return out
}

// addListenerExtensions gives the Envoy listener il the extensions'
// valid policies that apply to the Gateway listener l (targeting it or its
// Gateway), each once. An invalid policy is left out: the routes it wins
// on already answer 500 (withExtensionPolicies).
func (g *gatewayStage) addListenerExtensions(il *ir.Listener, l *gwListener) {
	at := routeAt{gwNamespace: l.gw.gw.Namespace, gwName: l.gw.gw.Name, listener: policyListener(l)}
	for _, set := range g.extPolicies {
		p := set.forRoute(at)
		if p == nil || len(p.invalid) > 0 || p.ext == nil {
			continue
		}
		if !slices.ContainsFunc(il.Extensions, func(x ir.ExtensionResource) bool { return bytes.Equal(x.JSON, p.ext.JSON) }) {
			il.Extensions = append(il.Extensions, *p.ext)
		}
	}
}

// extensionBackend is the cluster of a backendRef to an object of an
// extension's backend kind: named after the object, without endpoints,
// for the owner's PostClusterModify to complete; "" (with the reason in
// ResolvedRefs) when the object does not exist.
func (b *routeBuild) extensionBackend(gk schema.GroupKind, ns, name, where string) string {
	u := b.R.ExtensionObject(core.ExtKey{GK: gk, Namespace: ns, Name: name})
	if u == nil {
		b.refs.add(string(gwapiv1.RouteReasonBackendNotFound), "%s: %s %s/%s not found", where, gk, ns, name)
		return ""
	}
	js, err := core.ExtensionJSON(u)
	if err != nil {
		b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s: %s %s/%s: %v", where, gk, ns, name, err)
		return ""
	}
	protocol := ir.HTTP1
	if b.grpc {
		protocol = ir.H2C
	}
	cname := fmt.Sprintf("extension-backend/%s/%s/%s/%s", strings.ToLower(gk.Kind), gk.Group, ns, name)
	if protocol != ir.HTTP1 {
		cname += "/" + string(protocol)
	}
	c, ok := b.R.Snap.Clusters[cname]
	if !ok {
		c = &ir.Cluster{Name: cname, Protocol: protocol, Extension: &ir.ExtensionResource{Group: gk.Group, Kind: gk.Kind, JSON: js}}
		b.R.Snap.Clusters[cname] = c
	}
	b.Out.AddCluster(c)
	b.Out.ClusterUses.Add(cname, b.rt.ref)
	return cname
}
