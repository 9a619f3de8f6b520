// Package gatewayapi is the builder's Gateway API front door
// (docs/design/gateway-api.md): GatewayClasses, Gateways, HTTPRoutes,
// GRPCRoutes, ReferenceGrants and the policies, built into the same model
// as HTTPProxies, over the builder's core. One file per concern:
//
//   - class.go: which classes are ours, their status and features;
//   - listeners.go: each Gateway and its listeners on their own
//     (protocol, port, hostname, certificates, allowed routes);
//   - listenersets.go: the ListenerSets a Gateway allows, their listeners
//     merged into its list in precedence, and their status;
//   - frontendtls.go: the client certificate validation of its HTTPS
//     listeners (spec.tls.frontend);
//   - conflicts.go: listeners against each other and against the
//     HTTPProxies' hosts, per Envoy port;
//   - attach.go: a route's parentRefs, allowedRoutes and hostname
//     intersection;
//   - httproute.go, filters.go, grpcroute.go: the rules of each route kind
//     into IR routes;
//   - tlsroute.go, tcproute.go, stream.go: TLSRoutes and TCPRoutes, whose
//     connections are proxied to their backends (TLS passthrough by SNI;
//     TCP);
//   - udproute.go: UDPRoutes, whose datagrams are proxied to their
//     backends on UDP listeners of their own;
//   - backends.go, backendtls.go, refgrant.go: backendRefs, their TLS and
//     ReferenceGrants;
//   - hosts.go, precedence.go: the attached routes onto Envoy listeners
//     and virtual hosts, in the spec's precedence;
//   - misdirected.go: 421 for a Host another TLS listener serves;
//   - conditions.go, status.go: the findings, rendered as the API's
//     conditions;
//   - policy*.go, extension.go: ExtAuthPolicies, ExtProcPolicies and the
//     extensions' policies, their precedence, their effect on the routes
//     and their status;
//   - services.go, addresses.go: a Service and addresses per Gateway.
//
// Build runs after the HTTPProxy roots (it must see the hosts they keep),
// in one pass; the routes' rules are kept between builds by a Memo
// (memo.go). An invalid listener or route never affects another: it is
// left out, and its status says why.
package gatewayapi

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// gatewayStage is the state of the Gateway API stage of one build.
type gatewayStage struct {
	core.Stage
	controller string
	// classes are our GatewayClasses by name, with whether each is
	// accepted.
	classes map[string]bool
	// gateways are ours (of one of our classes), in input order.
	gateways []*gwGateway
	byName   map[types.NamespacedName]*gwGateway
	// setsByParent are the ListenerSets naming each Gateway of ours, in
	// precedence; listenerSets index them checked, by name, for the
	// routes' parentRefs (listenersets.go).
	setsByParent map[types.NamespacedName][]*gwapiv1.ListenerSet
	listenerSets map[types.NamespacedName]*gwListenerSet
	grants       grantIndex
	// backendTLS are the BackendTLSPolicies, checked, by the Service
	// ports they apply to (backendtls.go).
	backendTLS backendTLSIndex
	// configMaps are the ConfigMaps, for the CA certificates of the
	// BackendTLSPolicies and of the Gateways' client validation.
	configMaps map[types.NamespacedName]*corev1.ConfigMap
	// namespaceLabels are the labels of each Namespace, for allowedRoutes
	// selectors.
	namespaceLabels map[string]map[string]string
	// attachments are the attached routes' IR routes with their listener
	// and host, gathered for gatewayhosts.go.
	attachments []attachment
	// clusterByName indexes the clusters of the routes, for
	// backendclientcert.go (made on first use).
	clusterByName map[string]*ir.Cluster
	// placedTLS are the TLS virtual hosts placed, for misdirected.go.
	placedTLS []placedTLSHost
	// memo keeps the routes' rules between builds (nil for none).
	memo *GatewayMemo
	// addresses are where clients reach Envoy, for every Gateway's status
	// (envoyaddresses.go).
	addresses []gwapiv1.GatewayStatusAddress
	// authPolicies and procPolicies are the ExtAuthPolicies and
	// ExtProcPolicies with their precedence (gateway_policy*.go).
	authPolicies, procPolicies policySet
	// extPolicies are the extensions' policies, one set per kind.
	extPolicies []policySet
	// perGateway: gateway.servicePerGateway (gatewayservices.go); ports
	// are then each Gateway's Envoy ports by listener port, and envoyNS
	// and envoySvc the Service in front of Envoy (nil if missing).
	perGateway bool
	ports      map[types.NamespacedName]map[int32]uint32
	envoyNS    string
	envoySvc   *corev1.Service
}

// BuildGatewayAPI is the Gateway API stage: it adds the Gateway API's
// virtual hosts, listeners, clusters and secrets to m, and the statuses of
// its objects to b. With gateway.servicePerGateway it returns the
// Gateways' Services.
func BuildGatewayAPI(snap *core.Snapshot, m *ir.Model, b *core.Merged, memo *GatewayMemo, addrs []corev1.LoadBalancerIngress) (services []*corev1.Service) {
	if len(snap.In.GatewayClasses) == 0 && len(snap.In.ExtAuthPolicies) == 0 && len(snap.In.ExtProcPolicies) == 0 && !snap.HasExtensionPolicies() {
		return nil // nothing can be ours (policies are: they say what they found, an extension's on HTTPProxies too)
	}
	out := core.NewOutput()
	g := newGatewayStage(snap, &out, memo, addrs)
	memo.start(snap, g.backendTLS.key())
	defer memo.finish()
	g.buildClasses()
	g.indexListenerSets(snap.In.ListenerSets, snap.In.Gateways)
	if snap.Opts.GatewayServicePerGateway {
		g.startPerGateway(snap)
	}
	g.buildGateways(snap.In.Gateways)
	g.separatePorts()
	g.resolveConflicts(proxyHosts(m))
	for _, r := range snap.In.HTTPRoutes {
		g.buildHTTPRoute(r)
	}
	for _, r := range snap.In.GRPCRoutes {
		g.buildGRPCRoute(r)
	}
	for _, r := range snap.In.TLSRoutes {
		g.buildTLSRoute(r)
	}
	for _, r := range snap.In.TCPRoutes {
		g.buildTCPRoute(r)
	}
	for _, r := range snap.In.UDPRoutes {
		g.buildUDPRoute(r)
	}
	g.buildPolicies()
	g.placeRoutes(m)
	m.ExtensionPolicies = g.validExtensionPolicies()
	for _, x := range g.gateways {
		g.gatewayStatus(x)
		for _, s := range x.sets {
			g.listenerSetStatus(s)
		}
	}
	g.policyStatuses()
	g.backendTLSStatuses()
	services = g.gatewayServices()
	addGatewayOutput(b, &out)
	return services
}

// newGatewayStage is the Gateway API stage of a snapshot, adding to out.
func newGatewayStage(snap *core.Snapshot, out *core.Output, memo *GatewayMemo, addrs []corev1.LoadBalancerIngress) *gatewayStage {
	g := &gatewayStage{
		Stage:           core.Stage{R: &core.Resolver{Snap: snap}, Out: out},
		controller:      cmp.Or(snap.Opts.GatewayControllerName, config.DefaultGatewayControllerName),
		byName:          map[types.NamespacedName]*gwGateway{},
		listenerSets:    map[types.NamespacedName]*gwListenerSet{},
		grants:          newGrantIndex(snap.In.ReferenceGrants),
		namespaceLabels: map[string]map[string]string{},
		configMaps:      map[types.NamespacedName]*corev1.ConfigMap{},
		addresses:       gatewayAddresses(addrs),
		memo:            memo,
	}
	for _, ns := range snap.In.Namespaces {
		g.namespaceLabels[ns.Name] = ns.Labels
	}
	for _, cm := range snap.In.ConfigMaps {
		g.configMaps[core.NsName(cm.Namespace, cm.Name)] = cm
	}
	g.backendTLS = g.newBackendTLSIndex(snap.In.BackendTLSPolicies)
	return g
}

// startPerGateway sets up gateway.servicePerGateway: the Envoy Service
// the Gateways' Services copy, and the Envoy ports of our Gateways'
// listeners.
func (g *gatewayStage) startPerGateway(snap *core.Snapshot) {
	g.perGateway = true
	ns, name, _ := strings.Cut(snap.Opts.EnvoyService, "/")
	g.envoyNS, g.envoySvc = ns, snap.Services[core.NsName(ns, name)]
	var ours []*gwapiv1.Gateway
	for _, gw := range snap.In.Gateways {
		if _, ok := g.classes[string(gw.Spec.GatewayClassName)]; ok {
			ours = append(ours, gw)
		}
	}
	g.ports = gatewayPorts(snap, ns, ours, g.listenerSetPorts)
}

// buildGateways checks the Gateways of our GatewayClasses.
func (g *gatewayStage) buildGateways(gws []*gwapiv1.Gateway) {
	for _, gw := range gws {
		if accepted, ours := g.classes[string(gw.Spec.GatewayClassName)]; ours {
			x := g.buildGateway(gw, accepted)
			g.gateways = append(g.gateways, x)
			g.byName[core.NsName(gw.Namespace, gw.Name)] = x
		}
	}
}

// gatewayServices are the Services of the accepted Gateways with
// gateway.servicePerGateway (none without the Envoy Service to copy).
func (g *gatewayStage) gatewayServices() []*corev1.Service {
	if !g.perGateway || g.envoySvc == nil {
		return nil
	}
	var services []*corev1.Service
	for _, x := range g.gateways {
		if x.accepted() {
			services = append(services, gatewayService(x, g.envoySvc, g.ports[core.NsName(x.gw.Namespace, x.gw.Name)]))
		}
	}
	return services
}

// addGatewayOutput adds the Gateway API stage's statuses, clusters and
// secrets, and their uses, to the merged output.
func addGatewayOutput(b *core.Merged, out *core.Output) {
	for _, o := range out.Statuses() {
		b.Out.Put(o.Ref, o)
	}
	b.AddClusters(out.Clusters)
	b.AddSecrets(out.Secrets)
	b.Out.ClusterUses = append(b.Out.ClusterUses, out.ClusterUses...)
	b.Out.SecretUses = append(b.Out.SecretUses, out.SecretUses...)
}

// gatewayAPIStatus returns (creating) the findings of a Gateway API
// object; its parse warnings are in warnings (the strict decoder's
// complaints, which make it invalid).
func (g *gatewayStage) gatewayAPIStatus(kind, namespace, name string, generation int64) (*status.Object, []string) {
	ref := objects.Ref{Kind: kind, Namespace: namespace, Name: name}
	o, ok := g.Out.Status[ref]
	if !ok {
		o = &status.Object{Ref: ref, Generation: generation, GatewayAPI: &status.GatewayAPI{}}
		g.Out.Put(ref, o)
	}
	return o, g.R.Warnings(ref)
}

// Defaults of the Gateway API's references (the CRDs' defaults, which
// objects read from files do not get).
const (
	gatewayGroup  = gwapiv1.Group(gwapiv1.GroupName)
	kindGateway   = gwapiv1.Kind(objects.KindGateway)
	kindService   = gwapiv1.Kind("Service")
	kindSecret    = gwapiv1.Kind("Secret")
	kindHTTPRoute = gwapiv1.Kind(objects.KindHTTPRoute)
	kindGRPCRoute = gwapiv1.Kind(objects.KindGRPCRoute)
	kindTLSRoute  = gwapiv1.Kind(objects.KindTLSRoute)
	kindTCPRoute  = gwapiv1.Kind(objects.KindTCPRoute)
	kindUDPRoute  = gwapiv1.Kind(objects.KindUDPRoute)
	// contourGroup and kindExtensionService name an ExtensionService as a
	// backend.
	contourGroup         = gwapiv1.Group("projectcontour.io")
	kindExtensionService = gwapiv1.Kind(objects.KindExtensionService)
)

// orDefault is *p, or def when p is nil or empty.
func orDefault[T ~string](p *T, def T) T {
	if p == nil || *p == "" {
		return def
	}
	return *p
}
