// Package builder validates a snapshot of input objects, resolves their
// references and computes the routing model (internal/ir) and the findings
// for each object's status. Its result is a pure function of its input (a
// Memo only saves work): no clients, no clocks, no goroutines.
//
// An invalid object never affects the others: a root HTTPProxy with an
// error is not served at all (never served half-configured, never without
// its authorization), a child with an error contributes no routes, and
// everything else is built as usual.
//
// The shape: snapshot.go indexes the input (hosts.go decides which root
// keeps a host name); the global stage (global.go, extension.go, secret.go)
// validates what every root depends on and completes the snapshot; then
// each root is built by buildRoot (root.go), a function of the root and of
// what it reads through its Resolver (resolver.go), which records every
// lookup. The rules (walk.go, route.go and one file per concern: tls.go,
// extauth.go, extproc.go, services.go, headers.go, timeouts.go,
// conditions.go) never see the Memo (memo.go), which reuses a root's
// result while its recorded reads hold. The Gateway API's objects are
// built after the roots, in one pass (gateway.go).
package builder

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Options are the control plane's settings that shape the build.
type Options struct {
	// RootNamespaces, when not empty, are the only namespaces where root
	// HTTPProxies (with a virtualhost) may live.
	RootNamespaces []string
	// IngressClassName selects the HTTPProxies this control plane serves:
	// those with this class, and those with none.
	IngressClassName string
	// FallbackCertificate is the Secret ("namespace/name") served to
	// clients without SNI by virtual hosts that enable it.
	FallbackCertificate string
	// ExternalNameServices lets routes and ExternalName Services send
	// traffic to the Service's DNS name. Off by default: a tenant could
	// otherwise point Envoy anywhere its network reaches.
	ExternalNameServices bool
	// LoopbackExternalNames also allows ExternalName Services that name this
	// host (localhost, 127.0.0.0/8, ::1), which can reach Envoy's own admin
	// interface. Only for tests and local development.
	LoopbackExternalNames bool
	// GlobalExtAuth and GlobalExtProc come from the configuration file
	// (internal/config), already checked there.
	GlobalExtAuth *config.GlobalExtAuth
	GlobalExtProc *contourv1.ExternalProcessor
	// RateLimitService is the global rate limit service (configuration
	// file, already checked there).
	RateLimitService *config.RateLimitService
	// Limits bound each root's include expansion (zeros: the defaults).
	Limits config.Limits
	// GatewayControllerName selects the GatewayClasses this control plane
	// serves (those whose spec.controllerName it is), and with them their
	// Gateways and the routes attached to those; empty for
	// config.DefaultGatewayControllerName.
	GatewayControllerName string
	// HTTP and HTTPS are where Envoy's shared HTTP and HTTPS listeners
	// bind, which serve the HTTPProxies: a Gateway listener on one of
	// their ports adds its hosts to that listener instead of getting its
	// own (port 0: none does). Gateway listeners of ports of their own bind
	// their address.
	HTTP, HTTPS Bind
	// EnvoyAddresses and EnvoyService ("namespace/name") say where
	// clients reach Envoy (config.Gateway): every Gateway's
	// status.addresses and every served root HTTPProxy's
	// status.loadBalancer (envoyaddresses.go).
	EnvoyAddresses []string
	EnvoyService   string
	// GatewayServicePerGateway gives each Gateway its own Envoy ports and
	// Service (config.Gateway.ServicePerGateway, gatewayservices.go).
	GatewayServicePerGateway bool
	// Extensions are the kinds the extension servers registered.
	Extensions ExtensionKinds
}

// Bind is where a listener binds.
type Bind struct {
	Address string
	Port    uint32
}

// DefaultListeners are the shared listeners' binds when no flag says:
// all addresses, ports 8080 and 8443.
func DefaultListeners() (http, https Bind) {
	return Bind{"0.0.0.0", 8080}, Bind{"0.0.0.0", 8443}
}

// WithConfig returns o with the settings of the configuration file.
func (o Options) WithConfig(c *config.Config) Options {
	o.GlobalExtAuth, o.GlobalExtProc, o.Limits = c.GlobalExtAuth, c.GlobalExtProc, c.Limits
	o.RateLimitService = c.RateLimitService
	o.GatewayControllerName = c.Gateway.Controller()
	o.EnvoyAddresses, o.EnvoyService = c.Gateway.Addresses, c.Gateway.EnvoyService
	o.GatewayServicePerGateway = c.Gateway.ServicePerGateway
	o.Extensions = extensionKindsOf(c)
	return o
}

// Result is the output of one build.
type Result struct {
	Model *ir.Model
	// Status holds the findings for every HTTPProxy, ExtensionService and
	// TLSCertificateDelegation this control plane owns, and for the
	// Gateway API objects it owns (GatewayClasses naming its controller,
	// their Gateways, the routes attached to those: status.Object's
	// GatewayAPI), sorted.
	Status []*status.Object
	// Unavailable lists the problems of the global authorization and
	// processing (configuration file) whose ExtensionService is missing or
	// invalid: they fail closed and need an operator.
	Unavailable []status.Problem
	// GatewayServices are the Services of the Gateways with
	// Options.GatewayServicePerGateway (sorted by name): what the Services
	// labelled GatewayServiceLabel in Envoy's namespace should be; nil when
	// that cannot be said (no Envoy Service known), empty for none.
	GatewayServices []*corev1.Service
}

// Kinds, as they appear in status references.
const (
	KindHTTPProxy                = objects.KindHTTPProxy
	KindExtensionService         = objects.KindExtensionService
	KindTLSCertificateDelegation = objects.KindTLSCertificateDelegation
)

// Build computes the model and the status findings for one snapshot.
func Build(in *objects.Set, opts Options) *Result { return BuildCached(in, opts, nil) }

// BuildCached is Build reusing the result of roots whose inputs are
// unchanged since the previous build with memo (see Memo; nil for none).
// `portcullis serve` keeps one across rebuilds; the result is Build's.
//
// The build runs in two stages: the global stage validates what every root
// depends on (ExtensionServices, delegations, the global authorization and
// processing) and completes the snapshot with it; then each root is built
// on its own against the snapshot (buildRoot) and the results merged.
func BuildCached(in *objects.Set, opts Options, memo *Memo) *Result {
	snap := newSnapshot(in, opts)
	model := newModel(opts)
	b := newMerged(buildGlobalStage(snap, model))
	memo.start(snap)
	roots := snap.roots()
	results := make([]*rootResult, len(roots))
	for i, r := range roots {
		results[i] = memo.root(snap, r.proxy, r.dup)
		b.apply(model, results[i])
	}
	uses := memo.keep(results)
	b.markOrphans(snap)
	addrs := envoyAddresses(snap)
	b.markLoadBalancer(results, addrs)
	services := buildGatewayAPI(snap, model, b, memo, addrs)
	b.finish(model, uses)

	if snap.opts.GatewayServicePerGateway {
		// nil: the Envoy Service is not known (yet, or it is being
		// recreated), so nothing can be said of the Gateways' Services;
		// empty: there are none (their writer deletes what is left).
		ns, name, _ := strings.Cut(snap.opts.EnvoyService, "/")
		if snap.services[nn(ns, name)] == nil {
			services = nil
		} else if services == nil {
			services = []*corev1.Service{}
		}
	}
	res := &Result{Model: model, GatewayServices: services}
	slices.SortFunc(res.GatewayServices, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range []*status.Problem{snap.global.authProblem, snap.global.procProblem} {
		if p != nil {
			res.Unavailable = append(res.Unavailable, *p)
		}
	}
	for _, o := range b.out.status {
		res.Status = append(res.Status, o)
	}
	status.SortObjects(res.Status)
	return res
}

// merged is the build's output: the global stage's, with every root's
// merged in.
type merged struct {
	stage
	// clusters and secrets by name: the first of a name (all of a name
	// are the same).
	clusters map[string]*ir.Cluster
	secrets  map[string]*ir.Secret
	// visited holds the HTTPProxies reached from a served root;
	// unservedBy, those reached only from roots that are not, with them.
	visited    map[types.NamespacedName]bool
	unservedBy map[types.NamespacedName][]string
}

func newMerged(global stage) *merged {
	b := &merged{stage: global, clusters: map[string]*ir.Cluster{}, secrets: map[string]*ir.Secret{},
		visited: map[types.NamespacedName]bool{}, unservedBy: map[types.NamespacedName][]string{}}
	b.addClusters(global.out.clusters)
	b.addSecrets(global.out.secrets)
	return b
}

func (b *merged) addClusters(cs []*ir.Cluster) {
	for _, c := range cs {
		if _, ok := b.clusters[c.Name]; !ok {
			b.clusters[c.Name] = c
		}
	}
}

func (b *merged) addSecrets(ss []*ir.Secret) {
	for _, s := range ss {
		if _, ok := b.secrets[s.Name]; !ok {
			b.secrets[s.Name] = s
		}
	}
}

// apply merges a root's result into the build. res is never modified: a
// Memo may reuse it in the next build.
func (b *merged) apply(m *ir.Model, res *rootResult) {
	for ref, o := range res.status {
		g := b.statusOf(ref.Kind, ref.Namespace, ref.Name, o.Generation)
		for _, p := range o.Errors {
			g.AddError(p.Type, p.Reason, p.Message)
		}
		for _, p := range o.Warnings {
			g.AddWarning(p.Type, p.Reason, p.Message)
		}
	}
	for k := range res.visited {
		if res.served {
			b.visited[k] = true
		} else {
			b.unservedBy[k] = append(b.unservedBy[k], nn(res.self.Namespace, res.self.Name).String())
		}
	}
	http, https := sharedListeners(m)
	http.Insecure = append(http.Insecure, res.insecure...)
	if res.secure != nil {
		https.Secure = append(https.Secure, res.secure)
	}
	if res.tcp != nil {
		https.TCPHosts = append(https.TCPHosts, res.tcp)
	}
	if res.fallback != nil {
		if https.Fallback == nil {
			https.Fallback = &ir.FallbackChain{Secret: res.fallbackSecret}
		}
		https.Fallback.VirtualHosts = append(https.Fallback.VirtualHosts, res.fallback)
	}
	b.addClusters(res.clusters)
	b.addSecrets(res.secrets)
}

// markOrphans marks the HTTPProxies with no virtual host that no served
// root reached: one that only invalid roots include is not served either,
// and its status says so and names them.
func (b *merged) markOrphans(snap *snapshot) {
	for _, p := range snap.in.HTTPProxies {
		k := nn(p.Namespace, p.Name)
		if !snap.served(p) || p.Spec.VirtualHost != nil || b.visited[k] {
			continue
		}
		st := b.proxyStatus(p)
		roots := b.unservedBy[k]
		if len(roots) > 0 && !st.Valid() {
			continue // its own errors say why
		}
		st.Orphaned = true
		if len(roots) > 0 {
			slices.Sort(roots)
			st.OrphanedMessage = fmt.Sprintf("this HTTPProxy is included only by root HTTPProxies that are invalid (%s): its routes are not served", strings.Join(slices.Compact(roots), ", "))
		}
	}
}

// finish gives the clusters and secrets their Origins (the objects the
// roots and the global stage say use them), leaves out the secrets nothing
// served uses, and sorts the model's lists
// so that the translator's input is deterministic. The clusters and
// secrets are copies: the roots' (which a Memo may reuse) and the previous
// build's model are never modified.
func (b *merged) finish(m *ir.Model, roots rootOrigins) {
	global := byName(b.out.clusterUses)
	for name, c := range b.clusters {
		o := *c
		o.Origins = roots.clusters.origins(name).Union(global[name])
		m.Clusters = append(m.Clusters, &o)
	}
	sort.Slice(m.Clusters, func(i, j int) bool { return m.Clusters[i].Name < m.Clusters[j].Name })
	global = byName(b.out.secretUses)
	for name, s := range b.secrets {
		o := *s
		o.Origins = roots.secrets.origins(name).Union(global[name])
		if len(o.Origins) == 0 {
			// Read for an object that turned out invalid: nothing served
			// uses it, and a private key goes to Envoy only when needed.
			continue
		}
		m.Secrets = append(m.Secrets, &o)
	}
	sort.Slice(m.Secrets, func(i, j int) bool { return m.Secrets[i].Name < m.Secrets[j].Name })
	for _, l := range m.Listeners {
		sort.Slice(l.Insecure, func(i, j int) bool { return l.Insecure[i].FQDN < l.Insecure[j].FQDN })
		sort.Slice(l.Secure, func(i, j int) bool { return l.Secure[i].FQDN < l.Secure[j].FQDN })
		sort.Slice(l.TCPHosts, func(i, j int) bool { return l.TCPHosts[i].FQDN < l.TCPHosts[j].FQDN })
	}
	sort.Slice(m.Listeners, func(i, j int) bool { return m.Listeners[i].Name < m.Listeners[j].Name })
}

// newModel is an empty model with the shared listeners, first.
func newModel(opts Options) *ir.Model {
	return &ir.Model{Listeners: []*ir.Listener{
		{Name: ir.HTTPListenerName, Address: opts.HTTP.Address, Port: opts.HTTP.Port},
		{Name: ir.HTTPSListenerName, Address: opts.HTTPS.Address, Port: opts.HTTPS.Port, TLS: true},
	}}
}

// sharedListeners are m's shared HTTP and HTTPS listeners (newModel's
// first two, until finish sorts them).
func sharedListeners(m *ir.Model) (http, https *ir.Listener) {
	return m.Listener(ir.HTTPListenerName), m.Listener(ir.HTTPSListenerName)
}
