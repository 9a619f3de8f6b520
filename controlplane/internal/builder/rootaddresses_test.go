package builder

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestRootLoadBalancer: every valid root gets where Envoy is reached;
// invalid roots, included and orphaned HTTPProxies get nothing.
func TestRootLoadBalancer(t *testing.T) {
	lb := []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}, {IP: "198.51.100.7"}, {Hostname: "lb.example.com"}}
	bad := proxy("bad", "bad.example.com", 1)
	bad.Spec.Routes[0].Services[0].Name = "missing"
	otherClass := proxy("other-class", "other.example.com", 1)
	otherClass.Spec.IngressClassName = "other"
	for _, tc := range []struct {
		name      string
		proxies   []*contourv1.HTTPProxy
		addresses []string
		service   string
		want      map[string][]corev1.LoadBalancerIngress // by name; absent: no status at all
	}{
		{"valid root", []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)}, []string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{"root": lb}},
		{"configured addresses only", []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)}, []string{"203.0.113.10", "envoy.example.com"}, "",
			map[string][]corev1.LoadBalancerIngress{"root": {{IP: "203.0.113.10"}, {Hostname: "envoy.example.com"}}}},
		{"nothing configured", []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)}, nil, "",
			map[string][]corev1.LoadBalancerIngress{"root": nil}},
		{"invalid root", []*contourv1.HTTPProxy{bad}, []string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{"bad": nil}},
		{"included child and orphan", []*contourv1.HTTPProxy{proxy("root", "a.example.com", 0, inc("child", "/c")), proxy("child", "", 1), proxy("orphan", "", 1)},
			[]string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{"root": lb, "child": nil, "orphan": nil}},
		{"child of an invalid root", []*contourv1.HTTPProxy{func() *contourv1.HTTPProxy {
			p := proxy("bad", "bad.example.com", 1, inc("child", "/c"))
			p.Spec.Routes[0].Services[0].Name = "missing"
			return p
		}(), proxy("child", "", 1)}, []string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{"bad": nil, "child": nil}},
		{"the root that keeps a host name", []*contourv1.HTTPProxy{proxy("one", "a.example.com", 1), proxy("two", "a.example.com", 1)},
			[]string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{"one": lb, "two": nil}},
		{"other ingress class", []*contourv1.HTTPProxy{otherClass}, []string{"203.0.113.10"}, "portcullis/envoy",
			map[string][]corev1.LoadBalancerIngress{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Build(addressSet(tc.proxies, "198.51.100.7"), core.Options{EnvoyAddresses: tc.addresses, EnvoyService: tc.service})
			got := map[string][]corev1.LoadBalancerIngress{}
			for _, o := range res.Status {
				if o.Ref.Kind == core.KindHTTPProxy {
					got[o.Ref.Name] = o.LoadBalancer
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRootLoadBalancerFollowsService: a Memo reusing an unchanged root
// still reports the Envoy Service's new address.
func TestRootLoadBalancerFollowsService(t *testing.T) {
	memo := NewMemo()
	opts := core.Options{EnvoyService: "portcullis/envoy"}
	root := proxy("root", "a.example.com", 1)
	lbOf := func(res *Result) []corev1.LoadBalancerIngress {
		for _, o := range res.Status {
			if o.Ref == (objects.Ref{Kind: core.KindHTTPProxy, Namespace: "default", Name: "root"}) {
				return o.LoadBalancer
			}
		}
		t.Fatal("no status for the root")
		return nil
	}
	first := BuildCached(addressSet([]*contourv1.HTTPProxy{root}, "198.51.100.7"), opts, memo)
	if got, want := lbOf(first), []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}, {Hostname: "lb.example.com"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first build: got %v, want %v", got, want)
	}
	second := BuildCached(addressSet([]*contourv1.HTTPProxy{root}, "198.51.100.8"), opts, memo)
	if got, want := lbOf(second), []corev1.LoadBalancerIngress{{IP: "198.51.100.8"}, {Hostname: "lb.example.com"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the Service's change: got %v, want %v", got, want)
	}
	if lbOf(first)[0].IP != "198.51.100.7" {
		t.Error("the second build changed the first one's findings")
	}
	// The status itself: a valid root's status.loadBalancer, none once
	// the root is invalid (e.g. Envoy rejected it).
	o := first.Status[0]
	if got := status.HTTPProxy(o, contourv1.HTTPProxyStatus{}, metav1.Now()).LoadBalancer.Ingress; len(got) != 2 || got[0].IP != "198.51.100.7" {
		t.Errorf("status.loadBalancer.ingress %v, want 198.51.100.7", got)
	}
	rejected := o.WithErrors(status.Problem{Type: "EnvoyRejected", Reason: "Rejected", Message: "no"})
	if got := status.HTTPProxy(rejected, contourv1.HTTPProxyStatus{}, metav1.Now()).LoadBalancer.Ingress; got != nil {
		t.Errorf("rejected root: status.loadBalancer.ingress %v, want none", got)
	}
}

// addressSet is proxies with their echo Service and the Envoy Service
// (portcullis/envoy) whose load balancer is at lbIP.
func addressSet(proxies []*contourv1.HTTPProxy, lbIP string) *objects.Set {
	set := &objects.Set{
		HTTPProxies: proxies,
		Services: []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "portcullis", Name: "envoy"},
				Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Port: 80}}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: lbIP}, {Hostname: "lb.example.com"}}}}},
		},
		EndpointSlices: []*discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "echo-1", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: core.PtrTo(int32(80))}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		}},
	}
	set.Sort()
	return set
}
