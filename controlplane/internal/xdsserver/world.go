package xdsserver

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// resource is one published resource, encoded once for every Envoy.
type resource struct {
	name string
	// version is the hash of its encoding: its delta xDS version, and
	// what tells a changed resource from an unchanged one.
	version string
	any     *anypb.Any
	// delta is the same, as a delta response carries it.
	delta *discoveryv3.Resource
}

func newResource(name, version string, any *anypb.Any) *resource {
	return &resource{name: name, version: version, any: any,
		delta: &discoveryv3.Resource{Name: name, Version: version, Resource: any}}
}

// table holds the resources of one type at one version. A published table
// is never modified (but for prev, atomically): every stream reads it
// without a lock, and a change costs each stream the names it touched,
// not the whole set.
type table struct {
	version uint64
	byName  map[string]*resource
	// all is every resource, by name: a full state-of-the-world response.
	all []*resource
	// touched names the resources added, changed or removed since prev.
	touched []string
	// prev is the table before this one, nil beyond keptVersions.
	prev atomic.Pointer[table]
}

// versionString is the table's version as the protocol carries it.
func (t *table) versionString() string { return strconv.FormatUint(t.version, 10) }

// next is the table after t with update applied and remove removed; t may
// be nil (the first table of a type).
func (t *table) next(update map[string]*resource, remove []string) *table {
	n := &table{byName: make(map[string]*resource, len(update))}
	if t != nil {
		n.version = t.version
		n.byName = maps.Clone(t.byName)
		n.prev.Store(t)
	}
	n.version++
	for name, r := range update {
		n.byName[name] = r
		n.touched = append(n.touched, name)
	}
	for _, name := range remove {
		delete(n.byName, name)
		n.touched = append(n.touched, name)
	}
	n.all = make([]*resource, 0, len(n.byName))
	for _, r := range n.byName {
		n.all = append(n.all, r)
	}
	slices.SortFunc(n.all, func(a, b *resource) int { return strings.Compare(a.name, b.name) })
	// Forget the tables beyond keptVersions, so that they can be freed
	// once no stream is behind them.
	c := n
	for range keptVersions {
		if c = c.prev.Load(); c == nil {
			break
		}
	}
	if c != nil {
		c.prev.Store(nil)
	}
	return n
}

// since returns the names touched after old up to t (old before t), and
// false when old is no longer among t's recent versions: then the two
// must be compared in full (diff).
func (t *table) since(old *table) ([]string, bool) {
	var names []string
	for c := t; c != nil; c = c.prev.Load() {
		if c == old {
			return names, true
		}
		names = append(names, c.touched...)
	}
	return nil, false
}

// diff names the resources that differ between old and t.
func (t *table) diff(old *table) []string {
	var names []string
	for name, r := range t.byName {
		if old.byName[name] != r {
			names = append(names, name)
		}
	}
	for name := range old.byName {
		if t.byName[name] == nil {
			names = append(names, name)
		}
	}
	return names
}

// lookup returns the resource name of t, which may be nil.
func (t *table) lookup(name string) *resource {
	if t == nil {
		return nil
	}
	return t.byName[name]
}

// at returns the table of version v among t's recent versions.
func (t *table) at(v string) *table {
	if t == nil {
		return nil
	}
	for c := t; c != nil; c = c.prev.Load() {
		if c.versionString() == v {
			return c
		}
	}
	return nil
}

// world is every type's table as published together.
type world struct {
	tables map[string]*table
	// changed is closed when a newer world is published.
	changed chan struct{}
}

// table returns the table of typeURL, empty for a type never published.
func (w *world) table(typeURL string) *table {
	if t := w.tables[typeURL]; t != nil {
		return t
	}
	return emptyTable
}

var emptyTable = &table{byName: map[string]*resource{}}
