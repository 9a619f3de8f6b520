package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildTLSRoute builds one TLSRoute: the TLS connections whose SNI name
// is one of its hostnames (as intersected with its listeners') go to its
// backends as they come, through the listeners of protocol TLS, mode
// Passthrough (stream.go).
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

// listenerPassthrough checks a TLS listener's tls: mode Passthrough only
// (the API's default is Terminate, which is not supported: refused, not
// served as passthrough, so that a client never gets another certificate
// than the one asked for).
func listenerPassthrough(l *gwListener) {
	t := l.spec.TLS
	switch {
	case t == nil || t.Mode == nil || *t.Mode != gwapiv1.TLSModePassthrough:
		mode := gwapiv1.TLSModeTerminate
		if t != nil && t.Mode != nil {
			mode = *t.Mode
		}
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.mode %q is not supported on a TLS listener: only Passthrough", mode)
	case len(t.CertificateRefs) > 0:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.certificateRefs must not be set with mode Passthrough: the backends terminate the TLS")
	case len(t.Options) > 0:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.options are not supported")
	}
}
