package xdsserver

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
	// sotwHead and deltaHead are the encoding of the resource in a
	// response of either protocol up to its message's bytes, and value
	// those bytes (any.Value): a response is written from them without
	// copying the resource (see composed).
	sotwHead, deltaHead, value mem.Buffer
}

func newResource(name, version string, any *anypb.Any) *resource {
	sotw, delta := resourceHeads(name, version, any)
	return &resource{name: name, version: version, any: any,
		delta:    &discoveryv3.Resource{Name: name, Version: version, Resource: any},
		sotwHead: mem.SliceBuffer(sotw), deltaHead: mem.SliceBuffer(delta), value: mem.SliceBuffer(any.Value)}
}

// table holds the resources of one type at one version. A published table
// is never modified: every stream reads it without a lock, and a change
// costs each stream the names it touched, not the whole set. A table
// keeps the names its recent versions touched, not those versions: an old
// table lives only while a stream has not been sent past it (at 10,000
// TLS hosts each version's HTTPS listener is 9 MB).
type table struct {
	version uint64
	byName  map[string]*resource
	// from is the list of messages the table was made from (nextTable):
	// an Update with the same messages leaves the table as it is.
	from []proto.Message
	// all is every resource, by name, made on first use (a full response:
	// a first configuration, listeners and clusters over state of the
	// world), not for every version: a route change would sort 10,001
	// route configurations.
	all     []*resource
	allOnce sync.Once
	// history lists the names touched by this version and by up to
	// keptVersions-1 before it, oldest first.
	history []change
	// sotw and delta are the encodings of a response of every resource
	// (but its nonce), made once for every Envoy a first configuration is
	// sent to.
	sotw, delta encoded
}

// encoded is an encoded response, made once.
type encoded struct {
	once sync.Once
	b    []byte
	err  error
}

// encodeAll returns the encoding of a response of every resource of t
// but its nonce, made once: sent to many Envoys, which gRPC writes from
// without copying it (see preEncoded).
func (t *table) encodeAll(typeURL string, delta bool) ([]byte, error) {
	e := &t.sotw
	if delta {
		e = &t.delta
	}
	e.once.Do(func() {
		var m proto.Message
		if delta {
			res := make([]*discoveryv3.Resource, len(t.list()))
			for i, r := range t.list() {
				res[i] = r.delta
			}
			m = &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: t.versionString(), Resources: res}
		} else {
			anys := make([]*anypb.Any, len(t.list()))
			for i, r := range t.list() {
				anys[i] = r.any
			}
			m = &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: t.versionString(), Resources: anys}
		}
		e.b, e.err = proto.Marshal(m)
	})
	return e.b, e.err
}

// change is what one version of a table touched: the resources it added,
// changed or removed.
type change struct {
	version uint64
	touched []string
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
		n.history = t.history[max(0, len(t.history)-(keptVersions-1)):]
	}
	n.version++
	c := change{version: n.version}
	for name, r := range update {
		n.byName[name] = r
		c.touched = append(c.touched, name)
	}
	for _, name := range remove {
		delete(n.byName, name)
		c.touched = append(c.touched, name)
	}
	n.history = append(slices.Clip(n.history), c)
	return n
}

// list returns every resource of t, by name.
func (t *table) list() []*resource {
	t.allOnce.Do(func() {
		t.all = make([]*resource, 0, len(t.byName))
		for _, r := range t.byName {
			t.all = append(t.all, r)
		}
		slices.SortFunc(t.all, func(a, b *resource) int { return strings.Compare(a.name, b.name) })
	})
	return t.all
}

// touchedSince returns the names touched after version v up to t, and
// false when those versions are no longer all kept.
func (t *table) touchedSince(v uint64) ([]string, bool) {
	if v == t.version {
		return nil, true
	}
	if len(t.history) == 0 || t.history[0].version > v+1 || v > t.version {
		return nil, false
	}
	var names []string
	for _, c := range t.history {
		if c.version > v {
			names = append(names, c.touched...)
		}
	}
	return names, true
}

// since returns the names touched after old up to t, and false when old
// is too far behind: then the two must be compared in full (diff).
func (t *table) since(old *table) ([]string, bool) {
	if old == nil {
		return nil, false
	}
	return t.touchedSince(old.version)
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
