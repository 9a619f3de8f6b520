package translator

import (
	"slices"
	"strings"
	"sync"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Index maps every resource of a translation (type URL, then name) to the
// objects it came from, as the IR says: so that what Envoy says about a
// resource (a rejection) can be reported on them. It is built with the
// resources, from the IR they are made of: nothing is read back from
// resource names. Never modified once built (but for the lookup tables
// VirtualHostObjects makes, once, on first use), safe for concurrent use;
// nil is empty.
type Index struct {
	byType map[string]map[string]*indexEntry
	// clusters are the clusters and their endpoints, by name (sorted):
	// at scale tens of thousands, listed once per build where a map
	// would hash every name twice.
	clusters []clusterEntry
}

// clusterEntry is a cluster's origins, which are also its endpoints' when
// it has a ClusterLoadAssignment.
type clusterEntry struct {
	name      string
	endpoints bool
	origins   ir.Origins
}

// indexEntry is one resource's origins: its own (clusters, endpoints,
// secrets), or those of the hosts it serves (listeners and route
// configurations hold many, and a rejection may name some).
type indexEntry struct {
	origins ir.Origins
	hosts   []hostOrigins

	// vhosts are the origins of each Envoy virtual host, by name, made
	// by VirtualHostObjects on its first call on the resource.
	vhostsOnce sync.Once
	vhosts     map[string]ir.Origins
}

// hostOrigins are the origins of one IR virtual host in a listener or
// route configuration.
type hostOrigins struct {
	fqdn string
	// vhost names the Envoy virtual host that serves it: hosts with
	// identical routes share one, named after the first (mergeIdentical).
	vhost   string
	origins ir.Origins
	// routes is the version of its routes' translation (Versions.Routes),
	// in a shared route configuration.
	routes uint64
}

// newIndex returns an empty index for the resources of m.
func newIndex(m *ir.Model) *Index {
	return &Index{byType: map[string]map[string]*indexEntry{
		resourcev3.ListenerType: make(map[string]*indexEntry, len(m.Listeners)), resourcev3.RouteType: make(map[string]*indexEntry, routeConfigs(m)),
		resourcev3.SecretType: make(map[string]*indexEntry, len(m.Secrets)),
	}}
}

// addClusters indexes the model's clusters, es, sorting them by name if
// they are not (the model's are).
func (x *Index) addClusters(es []clusterEntry) {
	byName := func(a, b clusterEntry) int { return strings.Compare(a.name, b.name) }
	if !slices.IsSortedFunc(es, byName) {
		slices.SortStableFunc(es, byName)
	}
	x.clusters = es
}

// entry is the named resource's entry, nil for none.
func (x *Index) entry(typeURL, name string) *indexEntry {
	if typeURL != resourcev3.ClusterType && typeURL != resourcev3.EndpointType {
		return x.byType[typeURL][name]
	}
	i, ok := slices.BinarySearchFunc(x.clusters, name, func(e clusterEntry, name string) int { return strings.Compare(e.name, name) })
	if !ok || typeURL == resourcev3.EndpointType && !x.clusters[i].endpoints {
		return nil
	}
	// Made on lookup, which is rare (a rejection, a check of what is
	// served): a cluster has no hosts.
	return &indexEntry{origins: x.clusters[i].origins}
}

// routeConfigs is how many route configurations m needs, at most.
func routeConfigs(m *ir.Model) int {
	n := 0
	for _, l := range m.Listeners {
		n += 2 + len(l.Secure)
	}
	return n
}

func (x *Index) add(typeURL, name string, e *indexEntry) { x.byType[typeURL][name] = e }

// Served reports whether any of the named resources of one type is in the
// translation.
func (x *Index) Served(typeURL string, names []string) bool {
	if x == nil {
		return false
	}
	for _, n := range names {
		if x.entry(typeURL, n) != nil {
			return true
		}
	}
	return false
}

// Objects returns the objects behind the named resources of one type,
// sorted, given Envoy's message about them. Of a listener or route
// configuration, the hosts the message names are blamed if it names any,
// else all of them (all are affected: Envoy keeps the old resource). A
// message that names an Envoy virtual host serving several hosts blames
// them all: its routes are every one's.
func (x *Index) Objects(typeURL string, names []string, message string) ir.Origins {
	if x == nil {
		return nil
	}
	var out ir.Origins
	for _, name := range names {
		e := x.entry(typeURL, name)
		if e == nil {
			continue
		}
		out = append(out, e.origins...)
		named := map[string]bool{} // Envoy virtual hosts named whole
		var blamed []hostOrigins
		for _, h := range e.hosts {
			if strings.Contains(message, h.fqdn) {
				blamed = append(blamed, h)
				if h.fqdn == h.vhost {
					named[h.vhost] = true
				}
			}
		}
		for _, h := range e.hosts {
			if named[h.vhost] && h.fqdn != h.vhost {
				blamed = append(blamed, h)
			}
		}
		if len(blamed) == 0 {
			blamed = e.hosts
		}
		for _, h := range blamed {
			out = append(out, h.origins...)
		}
	}
	return ir.NewOrigins(out...)
}

// VirtualHostObjects returns the objects behind one Envoy virtual host, by
// its exact name, of the named listener or route configuration: the
// resource's own and those of the hosts the virtual host serves (several
// when identical hosts were merged), sorted. Unlike Objects, which looks
// for host names in a free-form message, no host is blamed because its
// name is part of another's (example.com in a.example.com), and a lookup
// takes constant time, not one pass over the resource's hosts. A name the
// resource has no virtual host of blames all its hosts, as Objects does.
func (x *Index) VirtualHostObjects(typeURL, name, vhost string) ir.Origins {
	if x == nil {
		return nil
	}
	e := x.entry(typeURL, name)
	if e == nil {
		return nil
	}
	e.vhostsOnce.Do(func() {
		e.vhosts = make(map[string]ir.Origins, len(e.hosts))
		for _, h := range e.hosts {
			e.vhosts[h.vhost] = append(e.vhosts[h.vhost], h.origins...)
		}
		for v, o := range e.vhosts {
			e.vhosts[v] = ir.NewOrigins(append(o, e.origins...)...)
		}
	})
	if o, ok := e.vhosts[vhost]; ok {
		return o
	}
	return x.Objects(typeURL, []string{name}, "")
}
