package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildTLSRoute builds one TLSRoute: the TLS connections whose SNI name
// is one of its hostnames (as intersected with its listeners') go to its
// backends through the listeners of protocol TLS (stream.go): as they
// come with mode Passthrough, decrypted with mode Terminate.
func (g *gatewayStage) buildTLSRoute(r *gwapiv1.TLSRoute) {
	rt := &gwRoute{
		ref:  objects.Ref{Kind: objects.KindTLSRoute, Namespace: r.Namespace, Name: r.Name},
		kind: kindTLSRoute, obj: r, parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames,
	}
	rules := make([]streamRule, len(r.Spec.Rules))
	for i, rule := range r.Spec.Rules {
		rules[i] = streamRule{name: rule.Name, backendRefs: rule.BackendRefs}
	}
	g.buildRoute(rt, func(b *routeBuild) []gwIRRoute { return b.streamRules(rules) })
}

// listenerTLSRoutes checks a TLS listener's tls: mode Terminate (the
// API's default: Envoy terminates the TLS with the listener's certificate,
// listenerTLS, and the backends get the decrypted stream) or Passthrough
// (the backends terminate it: no certificate to give).
func (g *gatewayStage) listenerTLSRoutes(l *gwListener) {
	t := l.spec.TLS
	if t == nil || t.Mode == nil || *t.Mode != gwapiv1.TLSModePassthrough {
		g.listenerTLS(l)
		return
	}
	switch {
	case len(t.CertificateRefs) > 0:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.certificateRefs must not be set with mode Passthrough: the backends terminate the TLS")
	case len(t.Options) > 0:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.options are not supported")
	}
}
