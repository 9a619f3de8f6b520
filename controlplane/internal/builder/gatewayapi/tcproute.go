package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildTCPRoute builds one TCPRoute: the connections of the listeners of
// protocol TCP it attaches to go to its backends as they come
// (stream.go). TCP has no host names: a listener's hostname is ignored,
// and the route serves the host "*".
func (g *gatewayStage) buildTCPRoute(r *gwapiv1.TCPRoute) {
	rt := &gwRoute{
		ref:  objects.Ref{Kind: objects.KindTCPRoute, Namespace: r.Namespace, Name: r.Name},
		kind: kindTCPRoute, obj: r, parentRefs: r.Spec.ParentRefs,
	}
	rules := make([]streamRule, len(r.Spec.Rules))
	for i, rule := range r.Spec.Rules {
		rules[i] = streamRule{name: rule.Name, backendRefs: rule.BackendRefs}
	}
	g.buildRoute(rt, func(b *routeBuild) []gwIRRoute { return b.streamRules(rules) })
}
