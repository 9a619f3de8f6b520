package translator

import (
	"reflect"
	"slices"

	"google.golang.org/protobuf/proto"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Cache remembers, from one translation to the next, the Envoy resources of
// each TLS virtual host (its route configuration and its filter chain), by
// FQDN, and the routes of each virtual host of the shared route
// configurations, by FQDN and route settings. At scale a change touches
// one host, and translating the other thousands again is most of the
// translation. A translation is reused when the host has the same version
// as the one it was translated from (ir.VirtualHost.Stamp: builder.Memo
// stamps the hosts of a root it built anew, and hands an unchanged root's
// hosts to the next build with their versions), or else when it is deeply
// equal to it (the Gateway API stage builds its hosts anew each time,
// unversioned, equal when unchanged). So the output is the same as
// without the cache. docs/design/caches.md lists every cache, its key and
// what invalidates it. The resources it returns are shared between
// translations: nothing may modify them. The listeners of Gateway ports
// of their own are translated afresh each time (listener.go). A Cache is for one goroutine at a time; the zero
// value is not usable, use NewCache. It also keeps the clusters and their
// endpoints, by name, reused while the cluster's content is unchanged
// (cachedCluster).
type Cache struct {
	hosts map[string]cachedHost
	// clusters are the clusters of the last translation, by name.
	clusters map[string]*cachedCluster
	// clusterBlock is where new cluster entries are made, a few hundred
	// at a time: a full build makes one per cluster, tens of thousands.
	clusterBlock []cachedCluster
	// translation counts the translations, to tell the clusters of the
	// last one (cachedCluster.used).
	translation uint64
	// listeners are the shared TLS listeners of the last translation, by
	// name; nextListeners those of the translation in progress.
	listeners, nextListeners map[string]cachedListener
	// vhosts holds the routes of the virtual hosts of shared route
	// configurations (the HTTP listener's, the fallback chain's), updated
	// in place: a change rewrites a few entries instead of a new map of
	// every host. vhostsGen is the translation in progress (starting at
	// 1, so that no entry's zero used is current); kept counts the
	// entries it used.
	vhosts          map[vhostKey]cachedRoutes
	vhostsGen, kept uint64
	// every are the model's settings of every HCM the hosts were
	// translated with.
	every everyHCM
	// Hits and Misses count the TLS hosts of the last translation.
	Hits, Misses int
}

type cachedHost struct {
	// in is the host translated, without its version (version).
	in      ir.SecureVirtualHost
	version uint64
	route   *routev3.RouteConfiguration
	chain   *listenerv3.FilterChain
	// routeVersion and chainVersion are route's and chain's (Versions):
	// a chain may outlive its route configuration.
	routeVersion, chainVersion uint64
}

// vhostKey names a shared configuration's virtual host: the same FQDN
// may be in both, with other settings.
type vhostKey struct {
	fqdn     string
	settings routeSettings
}

// cachedRoutes are the routes of a virtual host, with the host they were
// translated from (never modified; compared by version, else by content)
// and its version (which may be newer: a host equal to the one
// translated).
type cachedRoutes struct {
	in            *ir.VirtualHost
	version, used uint64
	routes        vhostRoutes
}

// sameVersion reports whether a host of version v is the one of version
// was: both versioned, the same version. Hosts of different versions may
// still be equal (an unchanged root built again): they are compared.
func sameVersion(v, was uint64) bool { return v != 0 && v == was }

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{hosts: map[string]cachedHost{}, vhosts: map[vhostKey]cachedRoutes{}, vhostsGen: 1,
		clusters: map[string]*cachedCluster{}, listeners: map[string]cachedListener{}, nextListeners: map[string]cachedListener{}}
}

// cachedListener is a shared TLS listener: its message, and the same
// without its filter chains (shell), with its chains. At 10,000 TLS
// hosts the listener is megabytes, which the xDS server would encode
// again on every change if it were a new message; a change to a host's
// routes keeps its chain (it names its routes over RDS).
type cachedListener struct {
	shell, listener *listenerv3.Listener
	chains          []*listenerv3.FilterChain
}

// listener returns shell with chains as its filter chains: the previous
// translation's message when shell equals its shell and chains are its
// chains (the same messages: the cached hosts' chains, never modified;
// other chains make a new message). shell is not modified.
func (c *Cache) listener(shell *listenerv3.Listener, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	if c != nil {
		if p, ok := c.listeners[shell.Name]; ok && slices.Equal(p.chains, chains) && proto.Equal(p.shell, shell) {
			c.nextListeners[shell.Name] = p
			return p.listener
		}
	}
	l := proto.Clone(shell).(*listenerv3.Listener)
	l.FilterChains = chains
	if c != nil {
		c.nextListeners[shell.Name] = cachedListener{shell: shell, listener: l, chains: chains}
	}
	return l
}

// commitListeners ends a translation: the listeners it did not make are
// forgotten.
func (c *Cache) commitListeners() {
	if c == nil {
		return
	}
	c.listeners, c.nextListeners = c.nextListeners, map[string]cachedListener{}
}

// cachedCluster is the translation of a cluster: its message and its
// endpoints' (nil for DNS and extension clusters), with the cluster it was
// translated from (a model's: never modified). Reusing the messages of an
// unchanged cluster spares translating it, and the xDS server encoding and
// hashing it again (its hashes are kept by message). At scale one change
// leaves thousands of clusters as they were.
type cachedCluster struct {
	in        *ir.Cluster
	cluster   *clusterv3.Cluster
	endpoints *endpointv3.ClusterLoadAssignment
	// used is the last translation that used it.
	used uint64
}

// cluster returns the translation of ic and its endpoints (nil for DNS
// and extension clusters), reused when ic, its Origins aside (they are
// not translated: they go to the Index), is deeply equal to the cluster of
// that name translated last. The builder copies its clusters on every
// build, sharing their fields: the comparison is mostly of pointers.
// Called for every cluster of a translation, in one goroutine, between the
// translation's startClusters and commitClusters.
func (c *Cache) cluster(ic *ir.Cluster) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	var old *cachedCluster
	if c != nil {
		if old = c.clusters[ic.Name]; old != nil && sameButOrigins(ic, old.in) {
			// ic from now on: the last model's, whose fields the next
			// build's clusters share, and the previous model is let go.
			// In place: no map write for each of ten thousand clusters.
			old.in, old.used = ic, c.translation
			return old.cluster, old.endpoints
		}
	}
	e := cachedCluster{in: ic, cluster: cluster(ic)}
	if ic.DNSName == "" && ic.Extension == nil {
		e.endpoints = loadAssignment(ic)
	}
	if c != nil {
		// Kept in a block: an uncached translation (portcullis
		// translate) allocates none, a cached one one per few hundred.
		// A slot let go holds nothing, so that a block kept for one live
		// entry keeps no old messages.
		if old != nil {
			*old = cachedCluster{}
		}
		if len(c.clusterBlock) == cap(c.clusterBlock) {
			c.clusterBlock = make([]cachedCluster, 0, 256)
		}
		e.used = c.translation
		c.clusterBlock = append(c.clusterBlock, e)
		c.clusters[ic.Name] = &c.clusterBlock[len(c.clusterBlock)-1]
	}
	return e.cluster, e.endpoints
}

// sameButOrigins reports whether two clusters are deeply equal, their
// Origins aside. Most often their Origins are equal too: compared whole
// first, without copying either.
func sameButOrigins(a, b *ir.Cluster) bool {
	if a == b || reflect.DeepEqual(a, b) {
		return true
	}
	x, y := *a, *b
	x.Origins, y.Origins = nil, nil
	return reflect.DeepEqual(&x, &y)
}

// startClusters begins a translation's clusters.
func (c *Cache) startClusters() {
	if c != nil {
		c.translation++
	}
}

// commitClusters ends a translation of n clusters: the clusters it did not
// use are forgotten.
func (c *Cache) commitClusters(n int) {
	if c == nil || len(c.clusters) == n {
		return
	}
	for name, e := range c.clusters {
		if e.used != c.translation {
			*e = cachedCluster{}
			delete(c.clusters, name)
		}
	}
}

// vhostRoutes returns the cached routes of vh for an HCM with these
// settings. Safe for concurrent readers.
func (c *Cache) vhostRoutes(vh *ir.VirtualHost, rs routeSettings) (vhostRoutes, bool) {
	if c == nil {
		return vhostRoutes{}, false
	}
	e, ok := c.vhosts[vhostKey{vh.FQDN, rs}]
	if !ok || !sameVersion(vh.Version(), e.version) && !reflect.DeepEqual(vh.Unversioned(), e.in.Unversioned()) {
		return vhostRoutes{}, false
	}
	return e.routes, true
}

// keepVHostRoutes keeps the routes of this translation's virtual hosts for
// the next one. An entry kept earlier in this translation (the same host
// in another configuration with the same settings) is as good as the
// previous translation's: both are a function of the host and settings.
func (c *Cache) keepVHostRoutes(vhs []*ir.VirtualHost, routes []vhostRoutes) {
	if c == nil {
		return
	}
	for i, vh := range vhs {
		k := vhostKey{vh.FQDN, routes[i].settings}
		if e, ok := c.vhosts[k]; !ok || e.used != c.vhostsGen {
			c.kept++
		}
		c.vhosts[k] = cachedRoutes{in: vh, version: vh.Version(), used: c.vhostsGen, routes: routes[i]}
	}
}

// commitVHosts ends a translation: the virtual hosts it did not use are
// forgotten.
func (c *Cache) commitVHosts() {
	if c == nil {
		return
	}
	if c.kept != uint64(len(c.vhosts)) {
		for k, e := range c.vhosts {
			if e.used != c.vhostsGen {
				delete(c.vhosts, k)
			}
		}
	}
	c.vhostsGen++
	c.kept = 0
}

// lookup returns the cached translation of vh, if its IR is unchanged.
// Safe for concurrent readers (the map is only replaced, in commit).
func (c *Cache) lookup(vh *ir.SecureVirtualHost) (cachedHost, bool) {
	if c == nil {
		return cachedHost{}, false
	}
	e, ok := c.hosts[vh.FQDN]
	if !ok || !sameVersion(vh.Version(), e.version) && !reflect.DeepEqual(vh.Unversioned(), e.in) {
		return cachedHost{}, false
	}
	// The next translation compares with this host's version.
	e.version = vh.Version()
	return e, true
}

// secureHost translates one TLS virtual host, or reuses its cached
// translation (made with the same settings of every HCM: see useEveryHCM).
func (c *Cache) secureHost(vh *ir.SecureVirtualHost, every everyHCM, enc *chainParts) (cachedHost, bool) {
	if e, ok := c.lookup(vh); ok {
		return e, true
	}
	route, chain := secureHost(secureHostsPrefix, vh, every, enc)
	// A host whose routes changed often keeps its filter chain (its HCM
	// names its route configuration by RDS): the previous message is
	// handed over again, so that what reuses work by message (the
	// extension runner's versions, the xDS server's hashes of the
	// listener) sees no change where there is none.
	h := cachedHost{in: vh.Unversioned(), version: vh.Version(), route: route, chain: chain, routeVersion: newVersion(), chainVersion: newVersion()}
	if c != nil {
		if prev, ok := c.hosts[vh.FQDN]; ok && proto.Equal(prev.chain, chain) {
			h.chain, h.chainVersion = prev.chain, prev.chainVersion
		}
	}
	return h, false
}

// useEveryHCM forgets the TLS hosts when the model's settings of every
// HCM (tracing, access log) are not those they were translated with:
// they are in every host's HCM, but not in the hosts the cache compares.
func (c *Cache) useEveryHCM(every everyHCM) {
	if c == nil || reflect.DeepEqual(c.every, every) {
		return
	}
	c.every = every
	clear(c.hosts)
}

// commit keeps exactly the hosts of the last translation: removed hosts
// are forgotten.
func (c *Cache) commit(hosts []cachedHost, hit []bool) {
	if c == nil {
		return
	}
	c.hosts = make(map[string]cachedHost, len(hosts))
	c.Hits, c.Misses = 0, 0
	for i, h := range hosts {
		c.hosts[h.in.FQDN] = h
		if hit[i] {
			c.Hits++
		} else {
			c.Misses++
		}
	}
}
