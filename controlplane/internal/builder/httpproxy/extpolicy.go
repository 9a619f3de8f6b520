package httpproxy

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// An extension's policy may target an HTTPProxy (core/extpolicy.go): the
// winner of each kind goes to its owner's PostRouteModify with every
// route written in the HTTPProxy's spec.routes, wherever it is included,
// as a Gateway API route's policies go with its rules.

// extensionPolicies are the extensions' resources of p's routes: the
// policies that win on p, one of each kind, with their objects (the
// routes' origins too: Envoy's rejection of what an extension made of a
// route reaches them); nil for none. Without registered policy kinds,
// nothing is looked up.
func (b *rootBuilder) extensionPolicies(p *contourv1.HTTPProxy) (res []ir.ExtensionResource, origins ir.Origins) {
	if len(b.R.Opts().Extensions.Policies) == 0 {
		return nil, nil
	}
	ps := b.R.ProxyPolicies(core.NsName(p.Namespace, p.Name))
	if len(ps) == 0 {
		return nil, nil
	}
	res = make([]ir.ExtensionResource, len(ps))
	refs := make([]objects.Ref, len(ps))
	for i, x := range ps {
		res[i], refs[i] = x.Resource, x.Ref
	}
	return res, ir.NewOrigins(refs...)
}

// withExtensionPolicies gives rt, route i of p, the policies res: its
// Extension, for PostRouteModify.
func withExtensionPolicies(rt *Route, p *contourv1.HTTPProxy, i int, res []ir.ExtensionResource) {
	if len(res) > 0 {
		rt.Extension = &ir.RouteExtension{Kind: core.KindHTTPProxy, Namespace: p.Namespace, Name: p.Name, RuleIndex: i, Resources: res}
	}
}
