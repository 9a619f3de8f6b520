package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func svc(name, version string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: version}}
}

func proxy(name, class string) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: contourv1.HTTPProxySpec{IngressClassName: class}}
}

func slice(name, service string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}}}
}

// TestSnapshotPatch: a snapshot patched from the previous build's index
// indexes exactly what a fresh one does, and names what changed; input
// that does not line up is indexed afresh, with the changes unknown.
func TestSnapshotPatch(t *testing.T) {
	a, b, c := svc("a", "1"), svc("b", "1"), svc("c", "1")
	p, q := proxy("p", ""), proxy("q", "")
	s1, s2 := slice("a-1", "a"), slice("a-2", "a")
	base := &objects.Set{Services: []*corev1.Service{a, b}, HTTPProxies: []*contourv1.HTTPProxy{p, q}, EndpointSlices: []*discoveryv1.EndpointSlice{s1, s2}}

	tests := []struct {
		name    string
		edit    func(*objects.Set)
		patched bool
		changed []string // services, proxies and slices' Services changed
	}{
		{"nothing changed", func(*objects.Set) {}, true, nil},
		{"a Service changed", func(s *objects.Set) { s.Services = []*corev1.Service{svc("a", "2"), b} }, true, []string{"service ns/a"}},
		{"an HTTPProxy changed", func(s *objects.Set) { s.HTTPProxies = []*contourv1.HTTPProxy{p, proxy("q", "")} }, true, []string{"proxy ns/q"}},
		{"an EndpointSlice changed", func(s *objects.Set) { s.EndpointSlices = []*discoveryv1.EndpointSlice{s1, slice("a-2", "a")} }, true, []string{"slices ns/a"}},
		{"a Service added", func(s *objects.Set) { s.Services = []*corev1.Service{a, b, c} }, false, nil},
		{"a Service renamed", func(s *objects.Set) { s.Services = []*corev1.Service{a, c} }, false, nil},
		{"an HTTPProxy leaves the class", func(s *objects.Set) { s.HTTPProxies = []*contourv1.HTTPProxy{p, proxy("q", "other")} }, false, nil},
		{"an EndpointSlice moves to another Service", func(s *objects.Set) { s.EndpointSlices = []*discoveryv1.EndpointSlice{s1, slice("a-2", "b")} }, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := NewSnapshot(base, Options{}, nil)
			next := *base
			tt.edit(&next)
			got := NewSnapshot(&next, Options{}, prev.Index())
			fresh := NewSnapshot(&next, Options{}, nil)
			if (got.changes != nil) != tt.patched {
				t.Fatalf("patched %v, want %v", got.changes != nil, tt.patched)
			}
			if !sameIndex(got, fresh) {
				t.Fatal("the patched index is not the fresh one")
			}
			if !tt.patched {
				return
			}
			var changed []string
			for k := range got.changes.services {
				changed = append(changed, "service "+k.String())
			}
			for k := range got.changes.proxies {
				changed = append(changed, "proxy "+k.String())
			}
			for k := range got.changes.slices {
				changed = append(changed, "slices "+k.String())
			}
			if len(changed) != len(tt.changed) || len(changed) == 1 && changed[0] != tt.changed[0] {
				t.Errorf("changed %v, want %v", changed, tt.changed)
			}
			// The previous snapshot's index is never written.
			if !sameIndex(prev, NewSnapshot(base, Options{}, nil)) {
				t.Error("patching modified the previous index")
			}
		})
	}
}

func sameIndex(a, b *Snapshot) bool {
	if len(a.Services) != len(b.Services) || len(a.Proxies) != len(b.Proxies) || len(a.slices) != len(b.slices) || len(a.secrets) != len(b.secrets) {
		return false
	}
	for k, v := range b.Services {
		if a.Services[k] != v {
			return false
		}
	}
	for k, v := range b.Proxies {
		if a.Proxies[k] != v {
			return false
		}
	}
	for k, v := range b.slices {
		if len(a.slices[k]) != len(v) {
			return false
		}
		for i := range v {
			if a.slices[k][i] != v[i] {
				return false
			}
		}
	}
	return true
}
