package pipeline_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestListenerPortsStayApart: listeners that differ in port are never
// merged on one Envoy port in the shared mode, though a port P below 1024
// is served on P + 8000: a listener on P + 8000 moves to P + 18000 when
// a listener is on P, and stays where it was otherwise.
func TestListenerPortsStayApart(t *testing.T) {
	secrets, err := os.ReadFile("testdata/common/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// gateway is a Gateway with listeners "name:protocol:port" and a route
	// attached to all of them.
	gateway := func(name string, listeners ...string) string {
		var ls []string
		for _, l := range listeners {
			f := strings.Split(l, ":")
			tls := ""
			if f[1] == "HTTPS" {
				tls = ", tls: {certificateRefs: [{name: echo}]}"
			}
			ls = append(ls, fmt.Sprintf("{name: %s, protocol: %s, port: %s%s}", f[0], f[1], f[2], tls))
		}
		return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %[1]s, namespace: default}
spec: {gatewayClassName: portcullis, listeners: [%[2]s]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[1]s, namespace: default}
spec:
  parentRefs: [{name: %[1]s}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`, name, strings.Join(ls, ", "))
	}
	for _, tc := range []struct {
		name     string
		gateways []string
		ports    []uint32          // the Envoy ports that serve hosts
		refused  map[string]string // listener (gateway/listener) -> reason
	}{
		{"80 and 8080 of one Gateway", []string{gateway("web", "http:HTTP:80", "alt:HTTP:8080")}, []uint32{8080, 18080}, nil},
		{"443 and 8443 (a public Gateway's grpc)", []string{gateway("web", "http:HTTP:80", "https:HTTPS:443", "grpc:HTTPS:8443")}, []uint32{8080, 8443, 18443}, nil},
		{"80 and 8080 of two Gateways", []string{gateway("a", "http:HTTP:80"), gateway("b", "alt:HTTP:8080")}, []uint32{8080, 18080}, nil},
		{"8080 alone stays on 8080", []string{gateway("web", "alt:HTTP:8080", "other:HTTP:9090")}, []uint32{8080, 9090}, nil},
		{"the moved-to port is a listener's own", []string{gateway("web", "http:HTTP:80", "alt:HTTP:8080", "high:HTTP:18080")}, []uint32{8080, 18080}, map[string]string{"web/alt": "PortUnavailable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runYAML(t, append([]string{gatewayClass, echoService, string(secrets)}, tc.gateways...)...)
			var ports []uint32
			for _, l := range res.Build.Model.Listeners {
				if len(l.Insecure) > 0 || len(l.Secure) > 0 {
					ports = append(ports, l.Port)
				}
			}
			slices.Sort(ports)
			if !slices.Equal(ports, tc.ports) {
				t.Errorf("Envoy ports serving hosts: %v, want %v", ports, tc.ports)
			}
			for _, o := range res.Build.Status {
				if o.Ref.Kind != objects.KindGateway {
					continue
				}
				for _, l := range o.GatewayAPI.Listeners {
					key := o.Ref.Name + "/" + string(l.Name)
					if reason, ok := tc.refused[key]; ok {
						wantCondition(t, l.Conditions, "Accepted", "False", reason, "18080")
						continue
					}
					wantCondition(t, l.Conditions, "Programmed", "True", "Programmed")
					wantCondition(t, l.Conditions, "Conflicted", "False", "NoConflicts")
				}
			}
		})
	}
}
