package gatewayapi

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestEnvoyAddresses: where clients reach Envoy, as a Gateway's
// status.addresses (typed) and a root HTTPProxy's status.loadBalancer.
func TestEnvoyAddresses(t *testing.T) {
	svc := func(clusterIP string, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "portcullis", Name: "envoy"},
			Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, ClusterIPs: []string{clusterIP}},
			Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	for _, tc := range []struct {
		name       string
		configured []string
		service    string
		in         []*corev1.Service
		want       []string // type:value
		wantLB     []corev1.LoadBalancerIngress
	}{
		{"none", nil, "", nil, nil, nil},
		{"configured, typed", []string{"10.0.0.1", "ingress.example.com", "2001:db8::1"}, "", nil,
			[]string{"IPAddress:10.0.0.1", "Hostname:ingress.example.com", "IPAddress:2001:db8::1"},
			[]corev1.LoadBalancerIngress{{IP: "10.0.0.1"}, {Hostname: "ingress.example.com"}, {IP: "2001:db8::1"}}},
		{"load balancer before cluster IP", nil, "portcullis/envoy", []*corev1.Service{svc("10.96.0.1", corev1.LoadBalancerIngress{IP: "198.51.100.1"}, corev1.LoadBalancerIngress{Hostname: "lb.example.com"})},
			[]string{"IPAddress:198.51.100.1", "Hostname:lb.example.com"}, []corev1.LoadBalancerIngress{{IP: "198.51.100.1"}, {Hostname: "lb.example.com"}}},
		{"load balancer ingress with both", nil, "portcullis/envoy", []*corev1.Service{svc("10.96.0.1", corev1.LoadBalancerIngress{IP: "198.51.100.1", Hostname: "lb.example.com"})},
			[]string{"IPAddress:198.51.100.1", "Hostname:lb.example.com"}, []corev1.LoadBalancerIngress{{IP: "198.51.100.1"}, {Hostname: "lb.example.com"}}},
		{"cluster IP without a load balancer", nil, "portcullis/envoy", []*corev1.Service{svc("10.96.0.1")}, []string{"IPAddress:10.96.0.1"},
			[]corev1.LoadBalancerIngress{{IP: "10.96.0.1"}}},
		{"headless service has none", nil, "portcullis/envoy", []*corev1.Service{svc(corev1.ClusterIPNone)}, nil, nil},
		{"missing service", []string{"10.0.0.1"}, "portcullis/missing", []*corev1.Service{svc("10.96.0.1")}, []string{"IPAddress:10.0.0.1"},
			[]corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}},
		{"repeats once", []string{"10.96.0.1"}, "portcullis/envoy", []*corev1.Service{svc("10.96.0.1")}, []string{"IPAddress:10.96.0.1"},
			[]corev1.LoadBalancerIngress{{IP: "10.96.0.1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := core.NewSnapshot(&objects.Set{Services: tc.in}, core.Options{EnvoyAddresses: tc.configured, EnvoyService: tc.service}, nil)
			addrs := core.EnvoyAddresses(snap)
			if !reflect.DeepEqual(addrs, tc.wantLB) {
				t.Errorf("load balancer: got %v, want %v", addrs, tc.wantLB)
			}
			var got []string
			for _, a := range gatewayAddresses(addrs) {
				got = append(got, string(*a.Type)+":"+a.Value)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("gateway: got %v, want %v", got, tc.want)
			}
		})
	}
}
