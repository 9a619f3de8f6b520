package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestMemoKeys: the Memo reuses a root when it and what it read have the
// same version (uid and resourceVersion) or are the same object, or, for
// the root, differ only in status; it builds it again otherwise, and the
// root's host then gets a new version (ir.VirtualHost.Stamp), which is
// what translator.Cache keys the host's translation by.
func TestMemoKeys(t *testing.T) {
	versioned := func(rv string, gen int64) func(*objects.Set) {
		return func(s *objects.Set) {
			p := s.HTTPProxies[0]
			p.UID, p.ResourceVersion, p.Generation = "root-uid", rv, gen
			s.Services[0].UID, s.Services[0].ResourceVersion = "echo-uid", rv
		}
	}
	root := func(f func(p *contourv1.HTTPProxy)) func(*objects.Set) *objects.Set {
		return func(s *objects.Set) *objects.Set {
			next := *s
			p := s.HTTPProxies[0].DeepCopy()
			f(p)
			next.HTTPProxies = []*contourv1.HTTPProxy{p}
			return &next
		}
	}
	service := func(f func(svc *corev1.Service)) func(*objects.Set) *objects.Set {
		return func(s *objects.Set) *objects.Set {
			next := *s
			svc := s.Services[0].DeepCopy()
			f(svc)
			next.Services = []*corev1.Service{svc}
			return &next
		}
	}
	tests := []struct {
		name   string
		setup  func(*objects.Set)
		change func(*objects.Set) *objects.Set
		reused bool
	}{
		{"the same objects", versioned("", 0), func(s *objects.Set) *objects.Set { return s }, true},
		{"a new root, the same version", versioned("7", 1), root(func(*contourv1.HTTPProxy) {}), true},
		{"the root's spec written", versioned("7", 1), root(func(p *contourv1.HTTPProxy) {
			p.Spec.Routes[0].Conditions[0].Prefix = "/changed"
			p.ResourceVersion, p.Generation = "8", 2
		}), false},
		{"the root's status written", versioned("7", 1), root(func(p *contourv1.HTTPProxy) {
			p.Status.Description = "written"
			p.ResourceVersion = "8"
		}), true},
		{"a new root without a version or generation", versioned("", 0), root(func(*contourv1.HTTPProxy) {}), false},
		{"a new Service, the same version", versioned("7", 1), service(func(*corev1.Service) {}), true},
		{"the Service's status written", versioned("7", 1), service(func(svc *corev1.Service) {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
			svc.ResourceVersion = "8"
		}), false},
		{"another Service of the same version (created again)", versioned("7", 1), service(func(svc *corev1.Service) {
			svc.UID = "other-uid"
		}), false},
		{"a new Service without a version", versioned("", 0), service(func(*corev1.Service) {}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &objects.Set{
				HTTPProxies: []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)},
				Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
			}
			tt.setup(set)
			memo := NewMemo()
			first := BuildCached(set, Options{}, memo)
			next := tt.change(set)
			second := BuildCached(next, Options{}, memo)
			if got := memo.Hits == 1; got != tt.reused || memo.Hits+memo.Misses != 1 {
				t.Fatalf("hits %d, misses %d; want the root reused: %v", memo.Hits, memo.Misses, tt.reused)
			}
			v1, v2 := first.Model.Listener(ir.HTTPListenerName).Insecure[0].Version(), second.Model.Listener(ir.HTTPListenerName).Insecure[0].Version()
			if v1 == 0 || v2 == 0 || (v1 == v2) != tt.reused {
				t.Errorf("host versions %d then %d; want nonzero, equal only when reused", v1, v2)
			}
			fresh := Build(next, Options{})
			if got, want := status.Summary(second.Status[0]), status.Summary(fresh.Status[0]); got != want {
				t.Errorf("cached status %q, fresh %q", got, want)
			}
		})
	}
}
