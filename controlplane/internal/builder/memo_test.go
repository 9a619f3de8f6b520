package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/builder/httpproxy"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestRootResultHolds: a root's result holds while every object its build
// looked up (found or not) is the same, and no longer once one changed; a
// new status on the root is not a change.
func TestRootResultHolds(t *testing.T) {
	root := proxy("root", "root.example.com", 1, inc("child", "/c"), inc("missing", "/m"))
	root.Generation, root.UID = 1, "uid-root"
	root.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "cert"}
	base := &objects.Set{
		HTTPProxies: []*contourv1.HTTPProxy{root, proxy("child", "", 1), proxy("bystander", "", 1)},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
		EndpointSlices: []*discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "echo-1", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: core.PtrTo(int32(80))}},
		}},
	}
	res := httpproxy.BuildRoot(core.NewSnapshot(base, core.Options{}, nil), root, "")
	for _, tc := range []struct {
		name   string
		change func(s *objects.Set)
		holds  bool
	}{
		{"nothing", func(*objects.Set) {}, true},
		{"an object it did not read", func(s *objects.Set) { s.HTTPProxies[2] = s.HTTPProxies[2].DeepCopy() }, true},
		{"a status written on the root", func(s *objects.Set) {
			p := s.HTTPProxies[0].DeepCopy()
			p.Status.Description = "written"
			s.HTTPProxies[0] = p
		}, true},
		{"the root's spec", func(s *objects.Set) {
			p := s.HTTPProxies[0].DeepCopy()
			p.Generation++
			s.HTTPProxies[0] = p
		}, false},
		{"an include", func(s *objects.Set) { s.HTTPProxies[1] = s.HTTPProxies[1].DeepCopy() }, false},
		{"an include it did not find, created", func(s *objects.Set) {
			s.HTTPProxies = append(s.HTTPProxies, proxy("missing", "", 1))
		}, false},
		{"a Service", func(s *objects.Set) { s.Services[0] = s.Services[0].DeepCopy() }, false},
		{"an EndpointSlice", func(s *objects.Set) { s.EndpointSlices[0] = s.EndpointSlices[0].DeepCopy() }, false},
		{"a Secret it did not find, created", func(s *objects.Set) {
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cert"}})
		}, false},
		{"a parse warning on an include", func(s *objects.Set) {
			s.Warnings = map[objects.Ref][]string{httpproxy.ProxyRef("default", "child"): {`unknown field "spec.x"`}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := *base
			next.HTTPProxies = append([]*contourv1.HTTPProxy(nil), base.HTTPProxies...)
			next.Services = append([]*corev1.Service(nil), base.Services...)
			next.EndpointSlices = append([]*discoveryv1.EndpointSlice(nil), base.EndpointSlices...)
			tc.change(&next)
			snap := core.NewSnapshot(&next, core.Options{}, nil)
			if got := res.Holds(snap, snap.Proxies[core.NsName("default", "root")], ""); got != tc.holds {
				t.Errorf("holds = %v, want %v", got, tc.holds)
			}
		})
	}
	if res.Holds(core.NewSnapshot(base, core.Options{}, nil), root, "another DuplicateVhost message") {
		t.Errorf("holds with another DuplicateVhost message")
	}
}
