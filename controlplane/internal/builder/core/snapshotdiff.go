package core

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Index is what a snapshot indexes of its input by name: kept by a Memo
// from one build to the next, so that the next snapshot patches it with
// the objects that changed instead of indexing tens of thousands again,
// and knows which names changed (Changes).
type Index struct {
	in      *objects.Set
	class   string
	secrets map[types.NamespacedName]*corev1.Secret
	svcs    map[types.NamespacedName]*corev1.Service
	slices  map[types.NamespacedName][]*discoveryv1.EndpointSlice
	proxies map[types.NamespacedName]*contourv1.HTTPProxy
}

// Changes are the names whose lookups may answer otherwise than in the
// previous build's snapshot: the only ones a memoized result that held
// then must be checked for again (Reads.Same). nil: not known, check
// everything.
type Changes struct {
	proxies, services, slices, secrets map[types.NamespacedName]bool
}

// Index is what s indexed by name, for the next build's NewSnapshot.
func (s *Snapshot) Index() *Index {
	return &Index{in: s.In, class: s.Opts.IngressClassName, secrets: s.secrets, svcs: s.Services, slices: s.slices, proxies: s.Proxies}
}

// patch indexes in from prev, the index of the previous build: when every
// list of in lines up with the previous one (the same names in the same
// order: objects.Set is sorted), the previous maps are copied and only the
// objects that differ are replaced, which also says which names changed.
// ok is false when they do not (an object added, removed or renamed; a
// name held twice; another ingress class): index afresh.
func (s *Snapshot) patch(prev *Index) (*Changes, bool) {
	if prev == nil || prev.class != s.Opts.IngressClassName {
		return nil, false
	}
	ch := &Changes{}
	var ok bool
	if s.secrets, ch.secrets, ok = patchIndex(prev.secrets, prev.in.Secrets, s.In.Secrets, nil); !ok {
		return nil, false
	}
	if s.Services, ch.services, ok = patchIndex(prev.svcs, prev.in.Services, s.In.Services, nil); !ok {
		return nil, false
	}
	if s.Proxies, ch.proxies, ok = patchIndex(prev.proxies, prev.in.HTTPProxies, s.In.HTTPProxies, func(p *contourv1.HTTPProxy) bool { return s.ownsClass(ingressClass(p)) }); !ok {
		return nil, false
	}
	if s.slices, ch.slices, ok = patchSlices(prev.slices, prev.in.EndpointSlices, s.In.EndpointSlices); !ok {
		return nil, false
	}
	return ch, true
}

// patchIndex is idx, the index of the list was, patched for the list now;
// keep (nil for all) says which objects are indexed. It gives up when the
// lists do not line up, or an object that changed is not its name's entry
// (a name held twice) or changes whether it is kept.
func patchIndex[T object](idx map[types.NamespacedName]T, was, now []T, keep func(T) bool) (map[types.NamespacedName]T, map[types.NamespacedName]bool, bool) {
	if len(was) != len(now) {
		return nil, nil, false
	}
	var changed map[types.NamespacedName]bool
	var out map[types.NamespacedName]T
	for i, o := range now {
		w := was[i]
		if o == w {
			continue
		}
		k := NsName(o.GetNamespace(), o.GetName())
		if k != NsName(w.GetNamespace(), w.GetName()) {
			return nil, nil, false
		}
		kept := keep == nil || keep(o)
		if kept != (keep == nil || keep(w)) || kept && idx[k] != w {
			return nil, nil, false
		}
		if changed == nil {
			changed, out = map[types.NamespacedName]bool{}, maps.Clone(idx)
		}
		changed[k] = true
		if kept {
			out[k] = o
		}
	}
	if out == nil {
		out = idx // nothing changed: shared, never written
	}
	return out, changed, true
}

// patchSlices is patchIndex for the EndpointSlices, indexed by the Service
// they belong to.
func patchSlices(idx map[types.NamespacedName][]*discoveryv1.EndpointSlice, was, now []*discoveryv1.EndpointSlice) (map[types.NamespacedName][]*discoveryv1.EndpointSlice, map[types.NamespacedName]bool, bool) {
	if len(was) != len(now) {
		return nil, nil, false
	}
	var changed map[types.NamespacedName]bool
	var out map[types.NamespacedName][]*discoveryv1.EndpointSlice
	for i, o := range now {
		w := was[i]
		if o == w {
			continue
		}
		svc := o.Labels[discoveryv1.LabelServiceName]
		if o.Namespace != w.Namespace || o.Name != w.Name || svc != w.Labels[discoveryv1.LabelServiceName] {
			return nil, nil, false
		}
		if svc == "" {
			continue // not indexed, then or now
		}
		k := NsName(o.Namespace, svc)
		if changed == nil {
			changed, out = map[types.NamespacedName]bool{}, maps.Clone(idx)
		}
		j := slices.Index(out[k], w)
		if j < 0 {
			return nil, nil, false
		}
		changed[k] = true
		// A copy: the previous index's list is the previous snapshot's.
		out[k] = slices.Clone(out[k])
		out[k][j] = o
	}
	if out == nil {
		out = idx
	}
	return out, changed, true
}

// sameAt is sameDeps knowing the names that changed since the lookups last
// held (nil: all may have).
func sameAt[T any](deps []dep[T], now map[types.NamespacedName]T, changed map[types.NamespacedName]bool, known bool, same func(a, b T) bool) bool {
	if !known {
		return sameDeps(deps, now, same)
	}
	if len(changed) == 0 {
		return true
	}
	for _, d := range deps {
		if changed[d.key] && !same(now[d.key], d.got) {
			return false
		}
	}
	return true
}
