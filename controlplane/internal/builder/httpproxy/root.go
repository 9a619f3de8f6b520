package httpproxy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// RootResult is what building one root HTTPProxy gives: the findings of
// its walk (on the root and the HTTPProxies it includes), its virtual
// hosts, the clusters and secrets they use (and who uses them), and what
// it read.
// Each root is built on its own, so that its result depends only on what
// it read, never on the roots built before it: that is what lets a Memo
// reuse it. It is never modified once built.
type RootResult struct {
	core.Output
	// visited holds the HTTPProxies reached from the root (sorted, once
	// each when the build ends); served whether the root is served
	// (valid): the HTTPProxies an invalid root reaches are not.
	visited []types.NamespacedName
	served  bool
	// statuses are Output.Status's values, listed once when the build
	// ends: Apply runs for every root of every rebuild, and starting an
	// iteration over a map costs more than reading a slice.
	statuses []*status.Object

	insecure       []*ir.VirtualHost
	secure         *ir.SecureVirtualHost
	tcp            *ir.TCPHost
	fallback       *ir.VirtualHost
	fallbackSecret string

	// The inputs: the root, the DuplicateVhost message it was built with
	// and what it looked up.
	self  *contourv1.HTTPProxy
	dup   string
	reads core.Reads
}

// rootBuilder holds the rules of one root's build: they read through the
// Resolver and write to the root's result.
type rootBuilder struct {
	core.Stage
	res *RootResult
	// exp is the include expansion of the root (expand.go).
	exp *expansion
	// walked lists the HTTPProxies reached from the root.
	walked []objects.Ref
}

// BuildRoot builds root p and what it includes; dup is its DuplicateVhost
// message ("" for none). The result is a function of p, dup and what the
// build reads of snap (recorded in it).
func BuildRoot(snap *core.Snapshot, p *contourv1.HTTPProxy, dup string) *RootResult {
	// Room for the root and an include or two (appending from nothing
	// allocates at each doubling).
	res := &RootResult{Output: core.NewOutput(), self: p, dup: dup, visited: make([]types.NamespacedName, 0, 4)}
	b := &rootBuilder{Stage: core.Stage{R: &core.Resolver{Snap: snap, Reads: &res.reads}, Out: &res.Output}, res: res}
	// A cluster for the service of each route, a route of each include,
	// and the authorization's (a guess: more only grows the lists).
	n := len(p.Spec.Routes) + len(p.Spec.Includes) + 1
	res.Reserve(n)
	res.reads.Reserve(n)
	b.R.Proxy(core.NsName(p.Namespace, p.Name))
	st := b.ProxyStatus(p)
	if dup != "" {
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonDuplicateVhost, dup)
	}
	b.root(p, st)
	res.ClusterUses, res.SecretUses = res.ClusterUses.Compact(), res.SecretUses.Compact()
	slices.SortFunc(res.visited, compareNsNames)
	res.visited = slices.Clip(slices.Compact(res.visited))
	res.statuses = res.Statuses()
	return res
}

func compareNsNames(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

func (b *rootBuilder) root(p *contourv1.HTTPProxy, st *status.Object) {
	b.res.visited = append(b.res.visited, core.NsName(p.Namespace, p.Name))
	rootNamespaceAllowed(p.Namespace, b.R.Opts().RootNamespaces, st)
	fqdnValid(p.Spec.VirtualHost.Fqdn, st)
	if nothingDefined(p, st) {
		return
	}

	secure := b.secureHost(p, st)
	auth := b.authorization(p, secure != nil, st)
	scope, hcmAuth := b.hostAuthScope(p, auth)
	scope.optOutForbidden = scope.enabled && b.R.Global().Auth != nil && b.R.Opts().GlobalExtAuth.OptOutForbidden()
	scope.proc = b.hostExtProc(p, secure != nil, st)
	scope.ipFilter = hostIPFilter(p.Spec.VirtualHost, st)
	cors := hostCORS(p.Spec.VirtualHost, st)
	rateLimit := hostRateLimit(p.Spec.VirtualHost, st)
	globalRateLimits := b.hostGlobalRateLimits(p.Spec.VirtualHost, st)
	jwt := b.jwtProviders(p, st)
	scope.jwt = jwt.scope

	b.walked = make([]objects.Ref, 0, 2)
	b.exp = newExpansion(p, b.R.Opts().Limits)
	routes := b.walk(p, nil, Route{}, scope)
	tcp := b.tcpProxy(p, secure, st) // tcpproxy.go, after the walk: the HTTPProxies it includes are the root's too
	if !st.Valid() {
		// Never serve a root half-configured: without its certificate,
		// without its authorization, or without some of its own routes.
		return
	}
	b.res.served = true
	fqdn := strings.ToLower(p.Spec.VirtualHost.Fqdn)
	routes = WithWildcardAuthority(fqdn, b.withoutInvalidProxies(routes))
	if p.Spec.TCPProxy != nil {
		b.recordRootUses(p, nil, hcmAuth, scope.proc)
		b.tcpVirtualHosts(p, fqdn, b.hostOrigins(), routes, tcp, scope.proc)
		return
	}
	b.recordRootUses(p, secure, hcmAuth, scope.proc)
	b.jwksClusters(p, secure, jwt)
	b.virtualHosts(p, fqdn, b.hostOrigins(), routes, secure, hcmAuth, scope.proc)
	b.hostPolicies(cors, rateLimit, globalRateLimits)
	if globalRateLimits != nil {
		b.Out.ClusterUses.Add(globalRateLimits.Service.Cluster, ProxyRef(p.Namespace, p.Name))
	}
}

// jwksClusters gives a served root's TLS host its JWT providers, and adds
// the clusters that fetch their keys.
func (b *rootBuilder) jwksClusters(p *contourv1.HTTPProxy, secure *ir.SecureVirtualHost, jwt hostJWT) {
	if secure == nil {
		return // no providers: jwtProviders needs TLS
	}
	secure.JWTProviders = jwt.providers
	root := ProxyRef(p.Namespace, p.Name)
	for _, c := range jwt.clusters {
		b.Out.AddCluster(c)
		b.Out.ClusterUses.Add(c.Name, root)
		if c.Validation != nil {
			b.Out.SecretUses.Add(c.Validation.CASecret, root)
		}
	}
}

// hostPolicies sets the policies of the root's virtual hosts themselves
// (rather than of their routes) on each listener's.
func (b *rootBuilder) hostPolicies(cors *ir.CORSPolicy, rateLimit *ir.LocalRateLimit, global *ir.GlobalRateLimits) {
	set := func(vh *ir.VirtualHost) { vh.CORS, vh.RateLimit, vh.GlobalRateLimits = cors, rateLimit, global }
	for _, vh := range b.res.insecure {
		set(vh)
	}
	if b.res.secure != nil {
		set(&b.res.secure.VirtualHost)
	}
	if b.res.fallback != nil {
		set(b.res.fallback)
	}
}

// withoutInvalidProxies drops the routes of the HTTPProxies found invalid
// during the walk. An HTTPProxy included on several paths can be valid
// under one and invalid under a later one: its status then says invalid,
// and none of its routes may be served, not even those taken in before.
func (b *rootBuilder) withoutInvalidProxies(routes []Route) []Route {
	return slices.DeleteFunc(routes, func(r Route) bool {
		for _, o := range r.Origins {
			if st := b.Out.Status[o]; st != nil && !st.Valid() {
				return true
			}
		}
		return false
	})
}

// rootNamespaceAllowed checks the root's namespace against
// Options.RootNamespaces (empty: any).
func rootNamespaceAllowed(namespace string, allowed []string, st *status.Object) {
	if len(allowed) > 0 && !slices.Contains(allowed, namespace) {
		st.AddError(contourv1.ConditionTypeRootNamespaceError, status.ReasonRootProxyNotAllowedInNamespace,
			fmt.Sprintf("root HTTPProxy cannot be defined in this namespace: root HTTPProxies are allowed in %s", strings.Join(allowed, ", ")))
	}
}

// nothingDefined: root p has nothing to serve (no route, no include, no
// tcpproxy), an error as in Contour, checked before the rest of the root
// (which would only add errors about a host that serves nothing). As in
// Contour, a root already refused for its host name, namespace or
// duplicate host gets only that error.
func nothingDefined(p *contourv1.HTTPProxy, st *status.Object) bool {
	if len(p.Spec.Routes) > 0 || len(p.Spec.Includes) > 0 || p.Spec.TCPProxy != nil {
		return false
	}
	if !st.Valid() {
		return true
	}
	st.AddError(contourv1.ConditionTypeSpecError, status.ReasonNothingDefined, "HTTPProxy.Spec must have at least one Route, Include, or a TCPProxy")
	return true
}

// fqdnValid checks spec.virtualhost.fqdn: set, a DNS name, or a wildcard
// whose only "*" is its whole first label ("*.example.com", wildcard.go).
func fqdnValid(fqdn string, st *status.Object) {
	lower := strings.ToLower(fqdn)
	name := strings.TrimPrefix(lower, "*.")
	switch {
	case lower == "":
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonFQDNNotSpecified, "Spec.VirtualHost.Fqdn must be specified")
	case strings.Contains(name, "*"):
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonWildCardNotAllowed, fmt.Sprintf("Spec.VirtualHost.Fqdn %q: a wildcard is only allowed as the whole first label (\"*.example.com\")", fqdn))
	default:
		if errs := core.DNSSubdomainErrors(name); len(errs) > 0 {
			st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonFQDNInvalid, fmt.Sprintf("Spec.VirtualHost.Fqdn %q is not a valid host name: %s", fqdn, strings.Join(errs, "; ")))
		}
	}
}

// virtualHosts puts a served root's routes on the listeners: the HTTP
// listener, and for a TLS host its own filter chain (and the fallback
// chain when it enables the fallback certificate).
func (b *rootBuilder) virtualHosts(p *contourv1.HTTPProxy, fqdn string, origins ir.Origins, routes []Route, secure *ir.SecureVirtualHost, hcmAuth *ir.ExtAuth, proc procScope) {
	if secure == nil {
		b.res.insecure = append(b.res.insecure, &ir.VirtualHost{FQDN: fqdn, Origins: origins, Routes: ownRoutes(routes)})
		return
	}
	secure.FQDN = fqdn
	secure.Origins = origins
	secure.Routes = ownRoutes(routes) // the routes below are copies
	secure.Auth = hcmAuth
	secure.ExtProc = proc.effective
	b.res.secure = secure
	// On the HTTP listener, a TLS host redirects to HTTPS, except the
	// routes that permit insecure access (irInsecureRoutes).
	b.res.insecure = append(b.res.insecure, &ir.VirtualHost{FQDN: fqdn, Origins: origins, Routes: sharedExtProc(InsecureRoutes(fqdn, routes, b.routeOrigin(p)), proc)})
	if p.Spec.VirtualHost.TLS.EnableFallbackCertificate {
		// secureHost checked that the fallback Secret resolves.
		fb := b.R.Opts().FallbackCertificate
		b.res.fallbackSecret, _ = b.TLSSecret(fb, core.SplitRef(fb, "").Namespace)
		b.res.fallback = &ir.VirtualHost{FQDN: fqdn, Origins: origins, Routes: sharedExtProc(irRoutes(routes, false), proc)}
		b.Out.SecretUses.Add(b.res.fallbackSecret, ProxyRef(p.Namespace, p.Name))
	}
}
