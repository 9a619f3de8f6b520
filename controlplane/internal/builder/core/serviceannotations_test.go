package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestServiceUpstream: Contour's Service annotations as Contour reads
// them (a port by name before number, appProtocol first, 0 for Envoy's
// default), and refused, naming the annotation and the value, where
// Contour would ignore them.
func TestServiceUpstream(t *testing.T) {
	h2c := "kubernetes.io/h2c"
	ports := []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "grpc", Port: 9000, AppProtocol: &h2c}, {Port: 443}}
	backend := func(port int, annotations map[string]string) *Backend {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Annotations: annotations}, Spec: corev1.ServiceSpec{Ports: ports}}
		for _, sp := range ports {
			if int(sp.Port) == port {
				return &Backend{Service: svc, Port: sp}
			}
		}
		t.Fatalf("no port %d", port)
		return nil
	}
	for _, tc := range []struct {
		name        string
		port        int
		annotations map[string]string
		want        Upstream
		reason      string // of the error; "" for none
		inMessage   string
	}{
		{name: "none", port: 80},
		{name: "appProtocol", port: 9000, want: Upstream{Protocol: ir.H2C}},
		{name: "by name", port: 80, annotations: map[string]string{"projectcontour.io/upstream-protocol.tls": "http"}, want: Upstream{Protocol: ir.TLS}},
		{name: "by number, spaces", port: 80, annotations: map[string]string{"projectcontour.io/upstream-protocol.h2": " 443, 80 "}, want: Upstream{Protocol: ir.H2}},
		{name: "unnamed port", port: 443, annotations: map[string]string{"projectcontour.io/upstream-protocol.h2c": "443"}, want: Upstream{Protocol: ir.H2C}},
		{name: "another port", port: 80, annotations: map[string]string{"projectcontour.io/upstream-protocol.tls": "443"}},
		{name: "agrees with appProtocol", port: 9000, annotations: map[string]string{"projectcontour.io/upstream-protocol.h2c": "grpc"}, want: Upstream{Protocol: ir.H2C}},
		{name: "circuit breakers", port: 80, annotations: map[string]string{
			"projectcontour.io/max-connections":          "1",
			"projectcontour.io/max-pending-requests":     "2",
			"projectcontour.io/max-requests":             "3",
			"projectcontour.io/max-retries":              "4",
			"projectcontour.io/per-host-max-connections": "5",
			"other.example/annotation":                   "x",
		}, want: Upstream{CircuitBreakers: &ir.CircuitBreakers{MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5}}},
		{name: "zero is the default", port: 80, annotations: map[string]string{"projectcontour.io/max-requests": "0"}},
		{name: "unsupported", port: 80, annotations: map[string]string{"projectcontour.io/num-retries": "3"}, reason: status.ReasonServiceAnnotationNotSupported, inMessage: "projectcontour.io/num-retries is not supported"},
		{name: "first by name", port: 80, annotations: map[string]string{"projectcontour.io/z": "", "projectcontour.io/a": ""}, reason: status.ReasonServiceAnnotationNotSupported, inMessage: "projectcontour.io/a "},
		{name: "not a number", port: 80, annotations: map[string]string{"projectcontour.io/max-connections": "1k"}, reason: status.ReasonServiceAnnotationInvalid, inMessage: `projectcontour.io/max-connections: "1k"`},
		{name: "too large", port: 80, annotations: map[string]string{"projectcontour.io/max-retries": "4294967296"}, reason: status.ReasonServiceAnnotationInvalid, inMessage: `"4294967296"`},
		{name: "unknown port", port: 80, annotations: map[string]string{"projectcontour.io/upstream-protocol.tls": "http,8080"}, reason: status.ReasonServiceAnnotationInvalid, inMessage: `projectcontour.io/upstream-protocol.tls: "8080"`},
		{name: "two protocols", port: 80, annotations: map[string]string{"projectcontour.io/upstream-protocol.tls": "http", "projectcontour.io/upstream-protocol.h2c": "80"}, reason: status.ReasonServiceAnnotationInvalid, inMessage: "both name port http"},
		{name: "against appProtocol", port: 9000, annotations: map[string]string{"projectcontour.io/upstream-protocol.tls": "9000"}, reason: status.ReasonServiceAnnotationInvalid, inMessage: `appProtocol "kubernetes.io/h2c"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ServiceUpstream(backend(tc.port, tc.annotations))
			if tc.reason != "" {
				if err == nil || err.Reason != tc.reason || !strings.Contains(err.Error(), tc.inMessage) {
					t.Fatalf("error %v, want reason %s with %q", err, tc.reason, tc.inMessage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Protocol != tc.want.Protocol || (got.CircuitBreakers == nil) != (tc.want.CircuitBreakers == nil) ||
				(got.CircuitBreakers != nil && *got.CircuitBreakers != *tc.want.CircuitBreakers) {
				t.Errorf("got %+v (%+v), want %+v (%+v)", got, got.CircuitBreakers, tc.want, tc.want.CircuitBreakers)
			}
		})
	}
}

// TestServiceUpstreamAllocations: the Services of most routes have no
// annotation of Contour's; reading them costs nothing.
func TestServiceUpstreamAllocations(t *testing.T) {
	be := &Backend{
		Service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}}},
		Port:    corev1.ServicePort{Name: "http", Port: 80},
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ServiceUpstream(be) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// TestServiceAnnotationsDocumented: each annotation ServiceUpstream reads
// is in the fields page's Service annotations section.
func TestServiceAnnotationsDocumented(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "httpproxy-fields.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "## Service annotations")
	if !ok {
		t.Fatal("docs/httpproxy-fields.md has no Service annotations section")
	}
	var keys []string
	for _, a := range upstreamProtocolAnnotations {
		keys = append(keys, a.key)
	}
	for _, a := range circuitBreakerAnnotations {
		keys = append(keys, a.key)
	}
	for _, k := range keys {
		if !strings.Contains(section, "`"+k+"`") {
			t.Errorf("%s is not documented", k)
		}
	}
}
