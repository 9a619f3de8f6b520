package translator

import (
	"google.golang.org/protobuf/proto"
	"reflect"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Cache remembers, from one translation to the next, the Envoy resources of
// each TLS virtual host (its route configuration and its filter chain) and
// the routes of each virtual host of the shared route configurations. At
// scale a change touches one host, and translating the other thousands
// again is most of the translation. A TLS host is reused when its IR is the
// same pointer as, or deeply equal to, the one it was translated from, and
// so is a shared configuration's virtual host (the same pointer is the
// same host without comparing: a model is never modified once built; the
// Gateway API stage builds its hosts anew each time, equal when
// unchanged). So the output is the same as
// without the cache. The resources it returns are shared between
// translations: nothing may modify them. The listeners of Gateway ports
// of their own are translated afresh each time (listener.go). A Cache is for one goroutine at a time; the zero
// value is not usable, use NewCache.
type Cache struct {
	hosts map[string]cachedHost
	// vhosts holds the routes of the virtual hosts of shared route
	// configurations (the HTTP listener's, the fallback chain's), by IR
	// pointer: the builder's Memo hands an unchanged root's virtual hosts
	// to the next build as the same pointers. next collects those of the
	// translation in progress.
	vhosts, next map[*ir.VirtualHost]vhostRoutes
	// named and nextNamed index vhosts and next by FQDN, to find the
	// previous translation of a host built anew.
	named, nextNamed map[string]*ir.VirtualHost
	// Hits and Misses count the TLS hosts of the last translation.
	Hits, Misses int
}

type cachedHost struct {
	// src points to the host translated, in is a copy of it.
	// A model is never modified once built, and builder.Memo hands the
	// same host to the next build when its root is unchanged, so the same
	// pointer is the same host without comparing.
	src   *ir.SecureVirtualHost
	in    ir.SecureVirtualHost
	route *routev3.RouteConfiguration
	chain *listenerv3.FilterChain
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{hosts: map[string]cachedHost{}, vhosts: map[*ir.VirtualHost]vhostRoutes{}, next: map[*ir.VirtualHost]vhostRoutes{},
		named: map[string]*ir.VirtualHost{}, nextNamed: map[string]*ir.VirtualHost{}}
}

// vhostRoutes returns the cached routes of vh for an HCM with these
// filters. Safe for concurrent readers.
func (c *Cache) vhostRoutes(vh *ir.VirtualHost, rs routeSettings) (vhostRoutes, bool) {
	if c == nil {
		return vhostRoutes{}, false
	}
	t, ok := c.vhosts[vh]
	if !ok {
		if old := c.named[vh.FQDN]; old != nil && reflect.DeepEqual(*old, *vh) {
			t, ok = c.vhosts[old]
		}
	}
	return t, ok && t.settings == rs
}

// keepVHostRoutes keeps the routes of this translation's virtual hosts for
// the next one.
func (c *Cache) keepVHostRoutes(vhs []*ir.VirtualHost, routes []vhostRoutes) {
	if c == nil {
		return
	}
	for i, vh := range vhs {
		c.next[vh] = routes[i]
		c.nextNamed[vh.FQDN] = vh
	}
}

// commitVHosts ends a translation: the virtual hosts it did not use are
// forgotten.
func (c *Cache) commitVHosts() {
	if c == nil {
		return
	}
	c.vhosts, c.next = c.next, map[*ir.VirtualHost]vhostRoutes{}
	c.named, c.nextNamed = c.nextNamed, map[string]*ir.VirtualHost{}
}

// lookup returns the cached translation of vh, if its IR is unchanged.
// Safe for concurrent readers (the map is only replaced, in commit).
func (c *Cache) lookup(vh *ir.SecureVirtualHost) (cachedHost, bool) {
	if c == nil {
		return cachedHost{}, false
	}
	e, ok := c.hosts[vh.FQDN]
	if !ok || e.src != vh && !reflect.DeepEqual(e.in, *vh) {
		return cachedHost{}, false
	}
	e.src = vh
	return e, true
}

// secureHost translates one TLS virtual host, or reuses its cached
// translation.
func (c *Cache) secureHost(vh *ir.SecureVirtualHost) (cachedHost, bool) {
	if e, ok := c.lookup(vh); ok {
		return e, true
	}
	route, chain := secureHost(secureHostsPrefix, vh)
	// A host whose routes changed often keeps its filter chain (its HCM
	// names its route configuration by RDS): the previous message is
	// handed over again, so that what compares messages by identity (the
	// extension hooks, the xDS server's hashes of the listener) sees no
	// change where there is none.
	if c != nil {
		if prev, ok := c.hosts[vh.FQDN]; ok && proto.Equal(prev.chain, chain) {
			chain = prev.chain
		}
	}
	return cachedHost{src: vh, in: *vh, route: route, chain: chain}, false
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
