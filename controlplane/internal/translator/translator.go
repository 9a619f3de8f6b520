// Package translator turns the IR into Envoy resources. It is a pure
// function: no clients, no clocks, deterministic output (sorted, stable), so
// that golden tests can pin it down. Each feature has its own file
// (extauthz.go, extproc.go, tls.go, route.go, redirect.go, ...); an
// HTTP filter is added to the HCMs by registering it, in order, in
// httpfilters.go.
package translator

import (
	"sort"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Options are the Envoy-side settings that do not come from the model.
type Options struct {
	// HTTPSRedirectPort is the port clients reach the HTTPS listener on
	// (through a Service or a load balancer, often not the one it binds):
	// the port of the plaintext listeners' redirects to HTTPS. 0 or 443
	// leave it out of the Location.
	HTTPSRedirectPort uint32
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
	// Encoded holds the deterministic encodings the translator assembled
	// from parts it kept (the shared route configurations: assembled.go),
	// by message, for the xDS server to hash and send instead of encoding
	// them again. Like the messages, they are never modified.
	Encoded map[proto.Message][]byte
}

// keepEncoding keeps rc's assembled encoding, if it has one.
func (r *Resources) keepEncoding(rc *routev3.RouteConfiguration, routeBytes []string) {
	if b, ok := assembled(rc, routeBytes); ok {
		if r.Encoded == nil {
			r.Encoded = map[proto.Message][]byte{}
		}
		r.Encoded[rc] = b
	}
}

// Names of the shared listeners' resources.
const (
	HTTPListenerName  = ir.HTTPListenerName
	HTTPSListenerName = ir.HTTPSListenerName
	// HTTPRouteConfigName is the route configuration of the HTTP listener
	// (a plaintext listener's is named after it).
	HTTPRouteConfigName = ir.HTTPListenerName
	// FallbackRouteConfigName is the route configuration of the HTTPS
	// listener's fallback certificate chain.
	FallbackRouteConfigName = "ingress_fallbackcert"
)

// SecureRouteConfigName is the route configuration of one TLS virtual host
// of the HTTPS listener.
func SecureRouteConfigName(fqdn string) string { return secureName(secureHostsPrefix, fqdn) }

// secureHostsPrefix begins the names of the resources of the HTTPS
// listener's TLS hosts (route configuration, filter chain).
const secureHostsPrefix = "https"

// hostsPrefix begins the names of the resources of a TLS listener's
// hosts: those of a Gateway listener's begin with the listener's name,
// https-<port>, so that they never collide with the HTTPS listener's.
func hostsPrefix(l *ir.Listener) string {
	if l.Name == ir.HTTPSListenerName {
		return secureHostsPrefix
	}
	return l.Name
}

// fallbackRouteConfigName names a TLS listener's fallback chain's route
// configuration ("_" is in no host name).
func fallbackRouteConfigName(l *ir.Listener) string {
	if l.Name == ir.HTTPSListenerName {
		return FallbackRouteConfigName
	}
	return l.Name + "_fallbackcert"
}

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

// TranslateCached is Translate reusing, and then updating, the shared
// listeners' TLS virtual hosts' resources and virtual hosts' routes in c
// (nil for no cache). Its output is Translate's.
func TranslateCached(m *ir.Model, opts Options, c *Cache) *Resources {
	r := &Resources{Index: newIndex(m), Versions: newVersions(sharedHosts(m))}
	c.useEveryHCM(modelHCM(m))
	for _, l := range m.Listeners {
		listener(r, m, l, opts, c)
	}
	c.commitVHosts()
	c.commitListeners()
	addClustersAndSecrets(r, m, c)
	sortByName(r.Listeners)
	sortByName(r.Routes)
	sortByName(r.Clusters)
	sortByName(r.Endpoints)
	sortByName(r.Secrets)
	return r
}

// sharedHosts are how many hosts the shared listeners serve, plaintext and
// TLS: the sizes of the translation's Versions.
func sharedHosts(m *ir.Model) (plaintext, tls int) {
	for _, l := range m.Listeners {
		if l.Shared() {
			plaintext += len(l.Insecure)
			tls += len(l.Secure)
		}
	}
	return plaintext, tls
}

// addClustersAndSecrets adds the model's clusters, their endpoints (but
// for DNS and extension clusters) and its secrets to r, indexed; the
// clusters cached in cache (which may be nil) are reused.
func addClustersAndSecrets(r *Resources, m *ir.Model, cache *Cache) {
	cache.startClusters()
	// One allocation for all the clusters' entries: there can be ten
	// thousand.
	entries := make([]clusterEntry, len(m.Clusters))
	for i, c := range m.Clusters {
		cluster, endpoints := cache.cluster(c)
		r.Clusters = append(r.Clusters, cluster)
		entries[i] = clusterEntry{name: c.Name, endpoints: endpoints != nil, origins: c.Origins}
		if endpoints != nil {
			r.Endpoints = append(r.Endpoints, endpoints)
		}
	}
	r.Index.addClusters(entries)
	cache.commitClusters(len(m.Clusters))
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

// sortByName sorts ms by name, stably. The lists mostly come sorted (the
// model's clusters are), and a check is n comparisons where the stable sort
// of ten thousand sorted clusters is n·log n.
func sortByName(ms []proto.Message) {
	less := func(i, j int) bool { return ResourceName(ms[i]) < ResourceName(ms[j]) }
	if !sort.SliceIsSorted(ms, less) {
		sort.SliceStable(ms, less)
	}
}
