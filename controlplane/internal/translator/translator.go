// Package translator turns the IR into Envoy resources. It is a pure
// function: no clients, no clocks, deterministic output (sorted, stable), so
// that golden tests can pin it down. Each feature has its own file
// (extauthz.go, extproc.go, tls.go, route.go, redirect.go, ...); an
// HTTP filter is added to the HCMs by registering it, in order, in
// httpfilters.go.
package translator

import (
	"sort"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/parallel"
)

// Options are the Envoy-side settings that do not come from the resources.
type Options struct {
	// HTTPAddress and HTTPPort are where Envoy's HTTP listener binds.
	HTTPAddress string
	HTTPPort    uint32
	// HTTPSAddress and HTTPSPort are where Envoy's HTTPS listener binds.
	HTTPSAddress string
	HTTPSPort    uint32
	// HTTPSRedirectPort is the port clients reach the HTTPS listener on
	// (through a Service or a load balancer, often not HTTPSPort): the
	// port of the HTTP listener's redirects to HTTPS. 0 or 443 leave it out
	// of the Location.
	HTTPSRedirectPort uint32
}

// DefaultOptions binds the listeners on all addresses, ports 8080 and 8443.
func DefaultOptions() Options {
	return Options{HTTPAddress: "0.0.0.0", HTTPPort: 8080, HTTPSAddress: "0.0.0.0", HTTPSPort: 8443}
}

// Resources are the Envoy resources for one model, each list sorted by
// name, and where each comes from.
type Resources struct {
	Listeners []proto.Message
	Routes    []proto.Message
	Clusters  []proto.Message
	Endpoints []proto.Message
	Secrets   []proto.Message
	// Index maps every resource to the objects it came from.
	Index *Index
	// Versions name the content of the parts Cache reuses.
	Versions *Versions
}

// Names of the fixed resources.
const (
	HTTPListenerName  = "ingress_http"
	HTTPSListenerName = "ingress_https"
	// HTTPRouteConfigName is the route configuration of the HTTP listener.
	HTTPRouteConfigName = "ingress_http"
	// FallbackRouteConfigName is the route configuration of the fallback
	// certificate chain.
	FallbackRouteConfigName = "ingress_fallbackcert"
)

// SecureRouteConfigName is the route configuration of one TLS virtual host
// of the HTTPS listener.
func SecureRouteConfigName(fqdn string) string { return secureName(secureHostsPrefix, fqdn) }

// secureHostsPrefix begins the names of the resources of the HTTPS
// listener's TLS hosts (route configuration, filter chain); those of a
// Gateway TLS listener's hosts begin with the listener's name,
// https-<port>, so that the two never collide.
const secureHostsPrefix = "https"

// secureName names the resources of one TLS virtual host of a listener.
func secureName(prefix, fqdn string) string { return prefix + "/" + fqdn }

// secureHostOrigins are the origins of a TLS virtual host: its own, and its
// filters' (its HCM is its own).
func secureHostOrigins(vh *ir.SecureVirtualHost) hostOrigins {
	o := routeFilterOrigins(&vh.VirtualHost, vh.Origins)
	if vh.Auth != nil {
		o = o.Union(vh.Auth.Origins)
	}
	if vh.ExtProc != nil {
		o = o.Union(vh.ExtProc.Origins)
	}
	return hostOrigins{fqdn: vh.FQDN, vhost: vh.FQDN, origins: o}
}

// Translate converts a model into Envoy resources.
func Translate(m *ir.Model, opts Options) *Resources { return TranslateCached(m, opts, nil) }

// TranslateCached is Translate reusing, and then updating, the TLS virtual
// hosts' resources and the shared route configurations' virtual hosts'
// routes in c (nil for no cache). Its output is Translate's.
func TranslateCached(m *ir.Model, opts Options, c *Cache) *Resources {
	r := &Resources{Index: newIndex(m), Versions: newVersions(len(m.Insecure), len(m.Secure))}
	chains, secure, httpsHosts := httpsChains(r, m, c)

	// The shared HCMs' filters depend on every route they serve
	// (routefilters.go).
	httpHCM := globalHCM(m).withRoutes(m.Insecure)
	rc, httpHosts := routeConfig(HTTPRouteConfigName, m.Insecure, httpRouteSettings(httpHCM, opts), c)
	r.Routes = append(r.Routes, rc)
	r.Index.add(resourcev3.RouteType, rc.Name, &indexEntry{hosts: httpHosts})
	r.Versions.addShared(rc.Name, httpHosts)
	r.Routes = append(r.Routes, secure...)
	var fallbackHCM hcmSettings
	if m.Fallback != nil {
		fallbackHCM = globalHCM(m).withRoutes(m.Fallback.VirtualHosts)
		rc, fallbackHosts := routeConfig(FallbackRouteConfigName, m.Fallback.VirtualHosts, routeSettings{filters: fallbackHCM.filters()}, c)
		r.Routes = append(r.Routes, rc)
		r.Index.add(resourcev3.RouteType, rc.Name, &indexEntry{hosts: fallbackHosts})
		r.Versions.addShared(rc.Name, fallbackHosts)
		httpsHosts = append(httpsHosts, fallbackHosts...)
	}
	c.commitVHosts()

	l := plaintextListener(HTTPListenerName, HTTPRouteConfigName, socketAddress(opts.HTTPAddress, opts.HTTPPort), httpHCM)
	r.Listeners = append(r.Listeners, l)
	r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{hosts: httpHosts})
	if l := httpsListener(m, opts, chains, fallbackHCM); l != nil {
		r.Listeners = append(r.Listeners, l)
		r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{hosts: httpsHosts})
	}
	for _, l := range m.Listeners {
		gatewayListener(r, l, m, opts)
	}
	addClustersAndSecrets(r, m)
	sortByName(r.Listeners)
	sortByName(r.Routes)
	sortByName(r.Clusters)
	sortByName(r.Endpoints)
	sortByName(r.Secrets)
	return r
}

// httpsChains are the HTTPS listener's filter chains of the TLS virtual
// hosts (translated or taken from c) and of the hosts proxied over TCP, in
// FQDN order; the TLS hosts' route configurations (indexed in r); and the
// hosts the listener serves so far.
func httpsChains(r *Resources, m *ir.Model, c *Cache) (chains []*listenerv3.FilterChain, secure []proto.Message, httpsHosts []hostOrigins) {
	// The TLS virtual hosts, sorted by FQDN (the order of the HTTPS
	// listener's filter chains), translated or taken from the cache.
	hosts := append([]*ir.SecureVirtualHost(nil), m.Secure...)
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].FQDN < hosts[j].FQDN })
	translated := make([]cachedHost, len(hosts))
	hit := make([]bool, len(hosts))
	parallel.For(len(hosts), func(i int) { translated[i], hit[i] = c.secureHost(hosts[i]) })
	c.commit(translated, hit)
	secure = make([]proto.Message, len(hosts))
	if len(hosts) > 0 {
		chains = make([]*listenerv3.FilterChain, len(hosts))
	}
	// The HTTPS listener serves the TLS hosts, through their own HCMs (and
	// filters), and the fallback chain's. One allocation for all the
	// hosts' entries: there can be ten thousand.
	httpsHosts = make([]hostOrigins, len(hosts))
	entries := make([]indexEntry, len(hosts))
	for i, t := range translated {
		chains[i], secure[i] = t.chain, t.route
		r.Versions.addSecure(t)
		httpsHosts[i] = secureHostOrigins(hosts[i])
		entries[i].hosts = httpsHosts[i : i+1 : i+1]
		r.Index.add(resourcev3.RouteType, t.route.Name, &entries[i])
	}

	// The hosts proxied over TCP have filter chains of their own
	// (tcpproxy.go), among the TLS hosts' in FQDN order.
	for _, vh := range m.TCPHosts {
		chains = append(chains, tcpHostChain(vh))
		httpsHosts = append(httpsHosts, tcpHostOrigins(vh))
	}
	sort.SliceStable(chains, func(i, j int) bool { return chains[i].Name < chains[j].Name })
	return chains, secure, httpsHosts
}

// addClustersAndSecrets adds the model's clusters, their endpoints (but
// for DNS and extension clusters) and its secrets to r, indexed.
func addClustersAndSecrets(r *Resources, m *ir.Model) {
	for _, c := range m.Clusters {
		r.Clusters = append(r.Clusters, cluster(c))
		e := &indexEntry{origins: c.Origins}
		r.Index.add(resourcev3.ClusterType, c.Name, e)
		if c.DNSName == "" && c.Extension == nil {
			r.Endpoints = append(r.Endpoints, loadAssignment(c))
			r.Index.add(resourcev3.EndpointType, c.Name, e)
		}
	}
	for _, s := range m.Secrets {
		r.Secrets = append(r.Secrets, secret(s))
		r.Index.add(resourcev3.SecretType, s.Name, &indexEntry{origins: s.Origins})
	}
}

// ResourceName returns the xDS name of an Envoy resource.
func ResourceName(m proto.Message) string {
	type named interface{ GetName() string }
	type clusterNamed interface{ GetClusterName() string }
	switch v := m.(type) {
	case clusterNamed:
		return v.GetClusterName()
	case named:
		return v.GetName()
	}
	return ""
}

func sortByName(ms []proto.Message) {
	sort.SliceStable(ms, func(i, j int) bool { return ResourceName(ms[i]) < ResourceName(ms[j]) })
}
