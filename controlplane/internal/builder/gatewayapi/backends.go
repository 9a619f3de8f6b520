package gatewayapi

import (
	"math"
	"slices"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// weightedRef is one backendRef of a rule, with what its own filters
// set.
type weightedRef struct {
	ref         gwapiv1.BackendRef
	where       string
	reqH, respH *ir.HeadersPolicy
	// ok: its filters can be honoured.
	ok bool
}

// invalidBackendCluster is the cluster of the backends that cannot be
// used: no cluster has this name, so Envoy answers their share of the
// traffic with the route's cluster-not-found code, 500
// (docs/design/gateway-api.md).
const invalidBackendCluster = "invalid-backend"

// weightedBackends resolves a rule's backendRefs into weighted clusters
// (weight 1 by default; 0 takes no traffic). The invalid ones keep their
// share under invalidBackendCluster. False when no valid backend takes
// traffic (none given, all invalid or all weighing 0): the rule answers
// 500.
func (b *routeBuild) weightedBackends(refs []weightedRef, where string) ([]ir.WeightedCluster, bool) {
	var out []ir.WeightedCluster
	var valid, invalid int64
	for _, r := range refs {
		w := int64(1)
		if r.ref.Weight != nil {
			w = int64(*r.ref.Weight)
		}
		if w < 0 {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: weight %d is negative: it takes no traffic", r.where, w)
			w = 0
		}
		// Resolved whatever its weight and filters: its condition says
		// whether it could be used.
		c := b.backendCluster(r.ref.BackendObjectReference, r.where)
		switch {
		case w == 0:
		case c == "" || !r.ok:
			invalid += w
		default:
			valid += w
			out = append(out, ir.WeightedCluster{Cluster: c, Weight: uint32(w), RequestHeaders: r.reqH, ResponseHeaders: r.respH})
		}
	}
	if valid+invalid > math.MaxUint32 {
		// Envoy rejects the whole route configuration over it.
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: the backends' weights add up to %d, more than %d: the rule answers 500", where, valid+invalid, uint32(math.MaxUint32))
		return nil, false
	}
	if valid == 0 {
		return nil, false
	}
	if invalid > 0 {
		out = append(out, ir.WeightedCluster{Cluster: invalidBackendCluster, Weight: uint32(invalid)})
	}
	return out, true
}

// backendCluster resolves one backend reference (a Service port, or a
// projectcontour.io ExtensionService) into the name of its cluster,
// shared with HTTPProxies' routes to the same Service port; "" when it
// cannot be used, with the reason in ResolvedRefs. Another namespace's
// backend needs a ReferenceGrant there. A Service port a BackendTLSPolicy
// applies to is spoken TLS to, verified as the policy says; it cannot be
// used while the policy is invalid.
func (b *routeBuild) backendCluster(ref gwapiv1.BackendObjectReference, where string) string {
	group, kind := orDefault(ref.Group, ""), orDefault(ref.Kind, kindService)
	ns := string(orDefault(ref.Namespace, gwapiv1.Namespace(b.rt.ref.Namespace)))
	key := core.NsName(ns, string(ref.Name))
	gk := schema.GroupKind{Group: string(group), Kind: string(kind)}
	builtin := (group == "" && kind == kindService) || (group == contourGroup && kind == kindExtensionService)
	if !builtin && !b.R.Opts().Extensions.Backends[gk] {
		return b.unusableBackend(where, gwapiv1.RouteReasonInvalidKind, "%s/%s is not a supported backend kind: use a Service or a projectcontour.io ExtensionService", group, kind)
	}
	if !b.referencePermitted(group, kind, key, where) {
		return ""
	}
	switch {
	case !builtin:
		return b.extensionBackend(gk, ns, string(ref.Name), where)
	case kind == kindExtensionService:
		return b.extensionServiceBackend(key, where)
	}
	return b.serviceBackend(key, ref.Port, where)
}

// referencePermitted checks that the route may use the backend key of
// group and kind: one of its namespace, or of another whose
// ReferenceGrant allows it (else RefNotPermitted in ResolvedRefs).
func (b *routeBuild) referencePermitted(group gwapiv1.Group, kind gwapiv1.Kind, key types.NamespacedName, where string) bool {
	if key.Namespace == b.rt.ref.Namespace || b.grants.permits(gatewayGroup, b.rt.kind, b.rt.ref.Namespace, group, kind, key) {
		return true
	}
	b.unusableBackend(where, gwapiv1.RouteReasonRefNotPermitted, "%s %s is in another namespace and no ReferenceGrant there allows %ss of %s to use it", kind, key, b.rt.kind, b.rt.ref.Namespace)
	return false
}

// unusableBackend records in ResolvedRefs why the backend reference at
// where cannot be used; "", no cluster, for the caller to return.
func (b *routeBuild) unusableBackend(where string, reason gwapiv1.RouteConditionReason, format string, args ...any) string {
	b.refs.add(string(reason), "%s: "+format, append([]any{where}, args...)...)
	return ""
}

// extensionServiceBackend is the cluster of a projectcontour.io
// ExtensionService used as a backend.
func (b *routeBuild) extensionServiceBackend(key types.NamespacedName, where string) string {
	ext, _, msg := b.R.Extension(key.Namespace, key.Name)
	if ext == nil {
		return b.unusableBackend(where, gwapiv1.RouteReasonBackendNotFound, "%s", msg)
	}
	b.Out.ClusterUses.Add(ext.Cluster.Name, b.rt.ref)
	return ext.Cluster.Name
}

// serviceBackend is the cluster of a Service port used as a backend,
// shared with HTTPProxies' routes to it: of the protocol and circuit
// breakers the Service's annotations and the port's appProtocol ask for
// (core.ServiceUpstream, as for HTTPProxies), h2c for GRPCRoutes when
// they name none.
func (b *routeBuild) serviceBackend(key types.NamespacedName, port *gwapiv1.PortNumber, where string) string {
	if port == nil {
		return b.unusableBackend(where, gwapiv1.RouteReasonBackendNotFound, "Service %s: port is required", key)
	}
	be, err := b.R.Backend(key, int(*port))
	if err != nil {
		return b.unusableBackend(where, gwapiv1.RouteReasonBackendNotFound, "%v", err)
	}
	up, aerr := core.ServiceUpstream(be)
	if aerr != nil {
		return b.unusableBackend(where, gwapiv1.RouteConditionReason(aerr.Reason), "Service %s: %v: it is not used rather than served otherwise", key, aerr)
	}
	protocol := up.Protocol
	switch {
	case b.stream:
		protocol = ir.HTTP1 // plaintext: the client's TLS, if any, is the backend's
	case b.grpc && protocol == ir.HTTP1:
		protocol = ir.H2C
	}
	var cs core.ClusterSettings
	if p := b.backendTLS.forPort(key, be.Port.Name); p != nil {
		if p.validation == nil {
			return b.unusableBackend(where, gwapiv1.RouteReasonUnsupportedProtocol, "Service %s port %d: BackendTLSPolicy %s, which applies to it, is invalid (%s): it is not used rather than sent plaintext or to an unverified peer", key, *port, p, p.invalid.message())
		}
		protocol = backendTLSProtocol(protocol)
		cs.Validation = p.validation
		b.Out.UseSecret(p.ca)
		b.Out.SecretUses.Add(p.ca.Name, b.rt.ref)
	}
	c := b.ClusterFor("service", be, protocol, up, cs)
	b.Out.ClusterUses.Add(c.Name, b.rt.ref)
	if core.PtrValue(be.Port.AppProtocol) == appProtocolWebSocket {
		if b.webSocket == nil {
			b.webSocket = map[string]bool{}
		}
		b.webSocket[c.Name] = true
	}
	return c.Name
}

// appProtocolWebSocket is the appProtocol of a Service port that speaks
// WebSocket (over HTTP/1.1, which its cluster speaks).
const appProtocolWebSocket = "kubernetes.io/ws"

// webSocketUpgrades says whether a rule to clusters lets WebSocket
// upgrades through: when one of them is a WebSocket backend. The upgrade
// is per route, so the rule's other backends get upgrade requests too;
// one that does not speak WebSocket answers them as any request.
func (b *routeBuild) webSocketUpgrades(clusters []ir.WeightedCluster) bool {
	return slices.ContainsFunc(clusters, func(c ir.WeightedCluster) bool { return b.webSocket[c.Cluster] })
}

// backendTLSProtocol is the protocol of a backend a BackendTLSPolicy
// applies to: HTTP/2 stays HTTP/2 (now over TLS), the rest is HTTP/1.1
// over TLS.
func backendTLSProtocol(p ir.Protocol) ir.Protocol {
	if p == ir.H2C || p == ir.H2 {
		return ir.H2
	}
	return ir.TLS
}
