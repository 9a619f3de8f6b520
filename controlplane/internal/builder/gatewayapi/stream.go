package gatewayapi

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// streamRule is a rule of a route whose connections are proxied, not
// its HTTP requests (TLSRoute, TCPRoute): its backends.
type streamRule struct {
	name        *gwapiv1.SectionName
	backendRefs []gwapiv1.BackendRef
}

// streamRules are the IR route of a route whose connections are proxied:
// its rule's weighted backends as the route's clusters (the API allows
// one rule). With no valid backend taking traffic, its connections go to
// invalidBackendCluster: Envoy closes them.
func (b *routeBuild) streamRules(rules []streamRule) []gwIRRoute {
	if len(rules) == 0 {
		b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "spec.rules must have a rule: no connection is proxied")
		return nil
	}
	if len(rules) > 1 {
		// The first rule is served: the others are dropped (PartiallyInvalid).
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "spec.rules has %d rules: only the first is served", len(rules))
	}
	b.valid++
	rule := rules[0]
	where := ruleWhere(0, rule.name)
	refs := make([]weightedRef, len(rule.backendRefs))
	for i, br := range rule.backendRefs {
		refs[i] = weightedRef{ref: br, where: fmt.Sprintf("%s.backendRefs[%d]", where, i), ok: true}
	}
	clusters, ok := b.weightedBackends(refs, where)
	if !ok {
		clusters = []ir.WeightedCluster{{Cluster: invalidBackendCluster, Weight: 1}}
	}
	x := &ir.Route{Origins: ir.Origins{b.rt.ref}, Clusters: clusters}
	return []gwIRRoute{{route: x, obj: b.rt.obj, kind: b.rt.kind}}
}

// streamHost is the TCP host of a stream listener's host: the
// connections (of a TLS listener: of its SNI name, any for "*") proxied
// to the backends of the oldest route attached (routes conflicting for a
// host: the oldest wins; the others are attached, and serve nothing);
// untouched, or decrypted with the certificate of a terminating TLS
// listener.
func streamHost(vh ir.VirtualHost, secret string) *ir.TCPHost {
	x := &ir.TCPHost{FQDN: vh.FQDN, Origins: vh.Origins, Passthrough: secret == "", Secret: secret}
	if len(vh.Routes) > 0 {
		x.Clusters = vh.Routes[0].Clusters
	}
	return x
}

// streamServedByOther tells the routes attached for a stream listener's
// host that do not serve it (Accepted stays True: they are attached, as
// the API's conformance tests want) which route does: the first of vh's,
// the oldest.
func streamServedByOther(h *gwHost, vh ir.VirtualHost, host string) {
	if len(vh.Routes) == 0 || len(vh.Routes[0].Origins) == 0 {
		return
	}
	winner, l := vh.Routes[0].Origins[0], h.listener
	for _, a := range h.attached {
		switch {
		case a.origin == winner:
		case l.tls:
			servedByOther(a, "%s %s/%s, older, serves host %q of %s (one route per host): this route serves no connection for it", winner.Kind, winner.Namespace, winner.Name, host, l)
		default:
			servedByOther(a, "%s %s/%s, older, serves %s (a TCP listener serves one route): this route serves no connection there", winner.Kind, winner.Namespace, winner.Name, l)
		}
	}
}
