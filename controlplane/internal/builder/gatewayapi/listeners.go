package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// gwGateway is one of our Gateways, checked.
type gwGateway struct {
	gw *gwapiv1.Gateway
	st *status.Object
	// problems make the Gateway not accepted (its own fields, its class).
	problems findings
	// listeners are its own (the first own of them), then those of the
	// ListenerSets it allows, in precedence (listenersets.go); sets are
	// the ListenerSets that name it.
	listeners []*gwListener
	own       int
	sets      []*gwListenerSet
	// refs are the Gateway's references that do not resolve
	// (ResolvedRefs: its backend client certificate); clientCert is that
	// certificate (backendclientcert.go).
	refs       findings
	clientCert *ir.Secret
}

func (x *gwGateway) accepted() bool { return len(x.problems) == 0 }

func (x *gwGateway) ref() objects.Ref {
	return objects.Ref{Kind: objects.KindGateway, Namespace: x.gw.Namespace, Name: x.gw.Name}
}

// ownListeners are the Gateway's own listeners (spec.listeners).
func (x *gwGateway) ownListeners() []*gwListener { return x.listeners[:x.own] }

// gwListener is one listener of one of our Gateways, its own or of a
// ListenerSet merged into it (set).
type gwListener struct {
	gw    *gwGateway
	set   *gwListenerSet
	index int
	spec  gwapiv1.Listener
	// hostname is lowercased; "" for any host.
	hostname  string
	envoyPort uint32
	tls       bool
	// stream: its routes proxy connections (TLSRoute passthrough,
	// TCPRoute), not HTTP requests (stream.go).
	stream bool
	// udp: its routes proxy datagrams (UDPRoute, udproute.go), on a UDP
	// socket of its port, apart from the TCP listeners of that port.
	udp bool
	// secret is the SDS secret of an HTTPS listener's certificate.
	secret string
	// clientValidation, when set, verifies the clients' certificates
	// against clientCA (spec.tls.frontend, frontendtls.go).
	clientValidation *ir.ClientValidation
	clientCA         *ir.Secret
	// kinds are the route kinds it allows that we support.
	kinds    []gwapiv1.RouteGroupKind
	from     gwapiv1.FromNamespaces
	selector labels.Selector

	// The findings of its conditions: accepted (the listener itself),
	// certs (ResolvedRefs: its certificates), badKinds (ResolvedRefs:
	// route kinds we do not support, which do not stop the others),
	// conflicted (against other listeners, gatewayconflicts.go), caRefs
	// (ResolvedRefs: the client validation's CA certificates, which do
	// not stop the valid ones).
	accepted, certs, badKinds, conflicted, caRefs findings
	// attached holds the routes attached to it.
	attached map[objects.Ref]bool
}

// ready: the listener is served (routes attached to it get traffic).
func (l *gwListener) ready() bool {
	return l.gw.accepted() && len(l.accepted) == 0 && len(l.certs) == 0 && len(l.conflicted) == 0
}

func (l *gwListener) String() string {
	if l.set != nil {
		return fmt.Sprintf("listener %q of %s", l.spec.Name, l.set)
	}
	return fmt.Sprintf("listener %q of Gateway %s/%s", l.spec.Name, l.gw.gw.Namespace, l.gw.gw.Name)
}

// rank is the listener's place in its Gateway's precedence: 0 for its
// own, then each ListenerSet's (GEP-1713).
func (l *gwListener) rank() int {
	if l.set == nil {
		return 0
	}
	return l.set.rank
}

// owner is the object whose spec has the listener: its namespace is the
// one of allowedRoutes' Same and of its certificates by default, and its
// kind what a ReferenceGrant must allow.
func (l *gwListener) owner() (kind gwapiv1.Kind, namespace string) {
	if l.set != nil {
		return kindListenerSet, l.set.ls.Namespace
	}
	return kindGateway, l.gw.gw.Namespace
}

// ownerRef is the object whose spec has the listener.
func (l *gwListener) ownerRef() objects.Ref {
	if l.set != nil {
		return l.set.ref()
	}
	return l.gw.ref()
}

// envoyPort is the port Envoy binds for a Gateway listener's port:
// privileged ports are shifted by 8000 (Envoy does not run as root), so
// that 80 and 443 are the shared listeners' 8080 and 8443. A listener on
// 8080 itself then moves (separatePorts).
func envoyPort(p int32) uint32 {
	if p < 1024 {
		return core.NonNegativeUint32(p) + 8000
	}
	return core.NonNegativeUint32(p)
}

// buildGateway checks one of our Gateways and its listeners on their
// own; conflicts between listeners come later (gatewayconflicts.go).
func (g *gatewayStage) buildGateway(gw *gwapiv1.Gateway, classAccepted bool) *gwGateway {
	st, complaints := g.gatewayAPIStatus(objects.KindGateway, gw.Namespace, gw.Name, gw.Generation)
	x := &gwGateway{gw: gw, st: st, problems: decodeFindings(complaints)}
	spec := gw.Spec
	if !classAccepted {
		x.problems.add(status.ReasonGatewayClassNotAccepted, "GatewayClass %q is not accepted", spec.GatewayClassName)
	}
	if msg := addressesRefused(spec.Addresses); msg != "" {
		x.problems.add(string(gwapiv1.GatewayReasonUnsupportedAddress), "%s", msg)
	}
	if i := spec.Infrastructure; i != nil && i.ParametersRef != nil {
		x.problems.add(string(gwapiv1.GatewayReasonInvalidParameters), "spec.infrastructure.parametersRef is not supported: this controller takes no parameters")
	}
	g.backendClientCert(x)
	allowed := readAllowedListeners(x)
	if spec.DefaultScope != "" {
		x.problems.add(status.ReasonUnsupportedField, "spec.defaultScope (default Gateways) is not supported")
	}
	if len(spec.Listeners) == 0 {
		x.problems.add(string(gwapiv1.GatewayReasonListenersNotValid), "spec.listeners must list at least one listener")
	}
	names := map[gwapiv1.SectionName]bool{}
	for i, ls := range spec.Listeners {
		l := g.buildListener(x, nil, i, ls)
		if names[ls.Name] {
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "another listener of the Gateway is named %q", ls.Name)
		}
		names[ls.Name] = true
		x.listeners = append(x.listeners, l)
	}
	x.own = len(x.listeners)
	g.buildListenerSets(x, allowed)
	return x
}

// buildListener checks one listener: its protocol, port, hostname, TLS
// and allowedRoutes.
func (g *gatewayStage) buildListener(x *gwGateway, set *gwListenerSet, i int, ls gwapiv1.Listener) *gwListener {
	l := &gwListener{gw: x, set: set, index: i, spec: ls, attached: map[objects.Ref]bool{}}
	switch ls.Protocol {
	case gwapiv1.HTTPProtocolType:
		if ls.TLS != nil {
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls must not be set on an HTTP listener")
		}
	case gwapiv1.HTTPSProtocolType:
		l.tls = true
		g.listenerTLS(l)
		g.frontendValidation(l)
	case gwapiv1.TLSProtocolType:
		l.tls, l.stream = true, true
		g.listenerTLSRoutes(l)
	case gwapiv1.TCPProtocolType, gwapiv1.UDPProtocolType:
		l.stream, l.udp = true, ls.Protocol == gwapiv1.UDPProtocolType
		if ls.TLS != nil {
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls must not be set on %s listener", withArticle(ls.Protocol))
		}
	default:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedProtocol), "protocol %q is not supported: use HTTP, HTTPS, TLS, TCP or UDP", ls.Protocol)
	}
	if ls.Port < 1 || ls.Port > 65535 {
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "port %d is not a port", ls.Port)
	} else if !g.perGateway {
		l.envoyPort = envoyPort(ls.Port)
	} else if p, ok := g.ports[core.NsName(x.gw.Namespace, x.gw.Name)][ls.Port]; ok {
		l.envoyPort = p
	} else {
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "no Envoy port left for port %d (Gateways have ports %d to %d)", ls.Port, GatewayPortFirst, GatewayPortLast)
	}
	if ls.Hostname != nil && (!l.stream || l.tls) { // TCP and UDP have no host names (the API: ignored)
		l.hostname = strings.ToLower(string(*ls.Hostname))
		if err := gatewayHostnameValid(l.hostname); err != nil {
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "hostname %v", err)
		}
	}
	g.allowedRoutes(l)
	return l
}

// gatewayHostnameValid checks a listener's or route's hostname: a DNS
// name, or one with a leading "*." label; not an IP address.
func gatewayHostnameValid(h string) error {
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") {
		return fmt.Errorf("%q: a wildcard is only allowed as the whole first label", h)
	}
	if errs := core.DNSSubdomainErrors(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid host name: %s", h, strings.Join(errs, "; "))
	}
	if len(validation.IsValidIP(nil, name)) == 0 {
		return fmt.Errorf("%q is an IP address, not a host name", h)
	}
	return nil
}

// listenerTLS resolves an HTTPS listener's (or a terminating TLS
// listener's) certificate: the first of
// certificateRefs (each must resolve: a wrong one is an error, not
// skipped), a TLS Secret of the Gateway's namespace or of another that
// grants it (ReferenceGrant).
func (g *gatewayStage) listenerTLS(l *gwListener) {
	t := l.spec.TLS
	switch {
	case t == nil:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "%s listener needs tls.certificateRefs", withArticle(l.spec.Protocol))
		return
	case t.Mode != nil && *t.Mode != gwapiv1.TLSModeTerminate:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.mode %q is not supported on %s listener: only Terminate", *t.Mode, withArticle(l.spec.Protocol))
		return
	case len(t.Options) > 0:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "tls.options are not supported")
		return
	case len(t.CertificateRefs) == 0:
		l.certs.add(string(gwapiv1.ListenerReasonInvalidCertificateRef), "tls.certificateRefs must name a certificate Secret")
		return
	}
	// A ListenerSet's references are its own: a ReferenceGrant to its
	// parent Gateway does not cover them (the ListenerSet API).
	ownerKind, ownerNS := l.owner()
	for i, ref := range t.CertificateRefs {
		where := fmt.Sprintf("tls.certificateRefs[%d]", i)
		group, kind := orDefault(ref.Group, ""), orDefault(ref.Kind, kindSecret)
		ns := orDefault(ref.Namespace, gwapiv1.Namespace(ownerNS))
		key := core.NsName(string(ns), string(ref.Name))
		if group != "" || kind != kindSecret {
			l.certs.add(string(gwapiv1.ListenerReasonInvalidCertificateRef), "%s: kind %s of group %q is not a Secret", where, kind, group)
			continue
		}
		if key.Namespace != ownerNS && !g.grants.permits(gatewayGroup, ownerKind, ownerNS, "", kindSecret, key) {
			l.certs.add(string(gwapiv1.ListenerReasonRefNotPermitted), "%s: Secret %s is in another namespace and no ReferenceGrant there allows %ss of %s to use it", where, key, ownerKind, ownerNS)
			continue
		}
		s, err := g.R.Certificate(key)
		if err != nil {
			l.certs.add(string(gwapiv1.ListenerReasonInvalidCertificateRef), "%s: Secret %s: %v", where, key, err)
			continue
		}
		if l.secret == "" {
			g.Out.UseSecret(s)
			l.secret = s.Name
		}
	}
	if len(l.certs) > 0 {
		l.secret = ""
	}
}

// withArticle is "an HTTPS", "a TLS".
func withArticle(p gwapiv1.ProtocolType) string {
	if p == gwapiv1.HTTPSProtocolType {
		return "an " + string(p)
	}
	return "a " + string(p)
}

// routeKinds are the route kinds a listener of each protocol supports
// (and allows by default).
var routeKinds = map[gwapiv1.ProtocolType][]gwapiv1.RouteGroupKind{
	gwapiv1.HTTPProtocolType:  httpKinds,
	gwapiv1.HTTPSProtocolType: httpKinds,
	gwapiv1.TLSProtocolType:   {{Group: core.PtrTo(gatewayGroup), Kind: kindTLSRoute}},
	gwapiv1.TCPProtocolType:   {{Group: core.PtrTo(gatewayGroup), Kind: kindTCPRoute}},
	gwapiv1.UDPProtocolType:   {{Group: core.PtrTo(gatewayGroup), Kind: kindUDPRoute}},
}

var httpKinds = []gwapiv1.RouteGroupKind{
	{Group: core.PtrTo(gatewayGroup), Kind: kindHTTPRoute},
	{Group: core.PtrTo(gatewayGroup), Kind: kindGRPCRoute},
}

// allowedRoutes reads a listener's allowedRoutes: the kinds (those we
// support; the others are InvalidRouteKinds) and the namespaces (Same by
// default).
func (g *gatewayStage) allowedRoutes(l *gwListener) {
	l.readAllowedKinds()
	l.readAllowedNamespaces()
}

// readAllowedKinds reads allowedRoutes.kinds: those of the listener's
// protocol we support (all of them when unset); the others are
// InvalidRouteKinds.
func (l *gwListener) readAllowedKinds() {
	ar := l.spec.AllowedRoutes
	supported := routeKinds[l.spec.Protocol]
	if len(l.accepted) > 0 && l.spec.Protocol != gwapiv1.HTTPProtocolType && l.spec.Protocol != gwapiv1.HTTPSProtocolType {
		supported = nil // a refused listener of another protocol supports no kind
	}
	if ar == nil || len(ar.Kinds) == 0 {
		l.kinds = supported
		return
	}
	for _, k := range ar.Kinds {
		group := orDefault(k.Group, gatewayGroup)
		if !slices.ContainsFunc(supported, func(s gwapiv1.RouteGroupKind) bool { return *s.Group == group && s.Kind == k.Kind }) {
			l.badKinds.add(string(gwapiv1.ListenerReasonInvalidRouteKinds), "route kind %s/%s is not supported", group, k.Kind)
			continue
		}
		l.kinds = append(l.kinds, gwapiv1.RouteGroupKind{Group: core.PtrTo(group), Kind: k.Kind})
	}
}

// readAllowedNamespaces reads allowedRoutes.namespaces (Same by default)
// and its selector.
func (l *gwListener) readAllowedNamespaces() {
	ar := l.spec.AllowedRoutes
	l.from = gwapiv1.NamespacesFromSame
	if ar == nil || ar.Namespaces == nil {
		return
	}
	l.from = orDefault(ar.Namespaces.From, gwapiv1.NamespacesFromSame)
	switch l.from {
	case gwapiv1.NamespacesFromSame, gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromNone:
	case gwapiv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		switch {
		case ar.Namespaces.Selector == nil:
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "allowedRoutes.namespaces.selector is required with from: Selector")
		case err != nil:
			l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "allowedRoutes.namespaces.selector: %v", err)
		default:
			l.selector = sel
		}
	default:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "allowedRoutes.namespaces.from %q is not one of All, Same, Selector, None", l.from)
	}
}
