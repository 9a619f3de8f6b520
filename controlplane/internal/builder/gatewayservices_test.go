package builder

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/builder/gatewayapi"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// perGatewayBase: the Service in front of Envoy, and three Gateways of
// different ages: two whose listeners (port 80, any host) would share
// one listener without gateway.servicePerGateway, and one with two
// ports, each with a route. Gateway "new" has a Service already, mapping
// 80 to 20007.
const perGatewayBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: v1
kind: Service
metadata:
  name: envoy
  namespace: portcullis
  annotations: {lb.example.com/internal: "true", meta.helm.sh/release-name: portcullis}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  loadBalancerSourceRanges: [10.0.0.0/8]
  selector: {app: envoy}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: old, namespace: a, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: two-ports, namespace: b, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  gatewayClassName: portcullis
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: other, port: 8080, protocol: HTTP}
  - {name: more, port: 8080, protocol: HTTP, hostname: more.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: new, namespace: a, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata:
  name: a-new-%s
  namespace: portcullis
  labels: {gateway.portcullis.dev/gateway: a.new}
  annotations: {gateway.portcullis.dev/gateway: a/new}
spec:
  type: LoadBalancer
  clusterIP: 10.0.0.7
  ports: [{name: port-80, port: 80, targetPort: 20007}]
status:
  loadBalancer: {ingress: [{ip: 192.0.2.7}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: a}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: b}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: a}
spec:
  parentRefs: [{name: old}, {name: new}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: b}
spec:
  parentRefs: [{name: two-ports}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`

// With gateway.servicePerGateway each Gateway gets Envoy ports of its
// own (kept from its Service, else picked by a hash of the Gateway), a
// Service with the Envoy Service's type and selector, and its Service's
// addresses; one without an address yet is not Programmed.
func TestServicePerGateway(t *testing.T) {
	var in objects.Set
	newSvc := gatewayapi.GatewayServiceName(core.NsName("a", "new"))
	if !strings.HasPrefix(newSvc, "a-new-") || len(newSvc) != len("a-new-")+10 {
		t.Fatalf("service name %q", newSvc)
	}
	if _, err := in.Decode(strings.NewReader(fmt.Sprintf(perGatewayBase, strings.TrimPrefix(newSvc, "a-new-"))), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	in.Sort()
	res := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy", GatewayServicePerGateway: true})

	// Each Gateway's listener ports map to Envoy ports of its own, the
	// same in its listeners and its Service; a/new keeps its Service's.
	envoyPorts := map[string]string{} // "gateway port" -> Envoy port
	var services []string
	for _, s := range res.GatewayServices {
		if s.Namespace != "portcullis" || s.Spec.Type != "LoadBalancer" || s.Spec.ExternalTrafficPolicy != "Local" || s.Spec.Selector["app"] != "envoy" ||
			!slices.Equal(s.Spec.LoadBalancerSourceRanges, []string{"10.0.0.0/8"}) {
			t.Errorf("service %s/%s: %+v", s.Namespace, s.Name, s.Spec)
		}
		// The load balancer's settings are the Envoy Service's (an
		// internal one stays internal); Helm's bookkeeping is not.
		if s.Annotations["lb.example.com/internal"] != "true" || s.Annotations["meta.helm.sh/release-name"] != "" {
			t.Errorf("service %s/%s annotations %v", s.Namespace, s.Name, s.Annotations)
		}
		gw := s.Annotations[objects.GatewayServiceAnnotation]
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
			envoyPorts[fmt.Sprintf("%s %d", gw, p.Port)] = p.TargetPort.String()
		}
		services = append(services, fmt.Sprintf("%s %s %v", gw, s.Labels[objects.GatewayServiceLabel], ports))
	}
	want := []string{"a/new a.new [port-80:80]", "a/old a.old [port-80:80]", "b/two-ports b.two-ports [port-80:80 port-8080:8080]"}
	if !slices.Equal(services, want) {
		t.Errorf("services %q, want %q", services, want)
	}
	if got := envoyPorts["a/new 80"]; got != "20007" {
		t.Errorf("a/new's port 80 goes to Envoy's %s, want its Service's 20007", got)
	}
	seen := map[string]bool{}
	for k, p := range envoyPorts {
		if n, err := strconv.Atoi(p); err != nil || n < gatewayapi.GatewayPortFirst || n > gatewayapi.GatewayPortLast || seen[p] {
			t.Errorf("%s: Envoy port %s, want one of its own in %d-%d", k, p, gatewayapi.GatewayPortFirst, gatewayapi.GatewayPortLast)
		}
		seen[p] = true
	}
	var listeners []string
	for _, l := range res.Model.Listeners {
		if l.Shared() {
			continue // the HTTPProxies' (here without hosts)
		}
		var origins []string
		for _, o := range l.Origins {
			origins = append(origins, o.Namespace+"/"+o.Name)
		}
		listeners = append(listeners, fmt.Sprintf("%s %v", l.Name, origins))
	}
	slices.Sort(listeners)
	want = nil
	for k, p := range envoyPorts {
		gw, _, _ := strings.Cut(k, " ")
		want = append(want, fmt.Sprintf("http-%s [%s]", p, gw))
	}
	slices.Sort(want)
	if !slices.Equal(listeners, want) {
		t.Errorf("listeners %q, want %q", listeners, want)
	}

	// A Gateway's ports do not depend on the others: without a/old (just
	// deleted, say), the others get the same ones.
	var without objects.Set
	if _, err := without.Decode(strings.NewReader(fmt.Sprintf(perGatewayBase, strings.TrimPrefix(newSvc, "a-new-"))), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	without.Gateways = slices.DeleteFunc(without.Gateways, func(g *gwapiv1.Gateway) bool { return g.Name == "old" })
	without.Sort()
	for _, s := range Build(&without, core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy", GatewayServicePerGateway: true}).GatewayServices {
		for _, p := range s.Spec.Ports {
			k := fmt.Sprintf("%s %d", s.Annotations[objects.GatewayServiceAnnotation], p.Port)
			if p.TargetPort.String() != envoyPorts[k] {
				t.Errorf("without a/old, %s goes to Envoy's %s, with it %s", k, p.TargetPort.String(), envoyPorts[k])
			}
		}
	}

	for _, o := range res.Status {
		if o.Ref.Kind != objects.KindGateway {
			continue
		}
		accepted := meta.FindStatusCondition(o.GatewayAPI.Conditions, string(gwapiv1.GatewayConditionAccepted))
		programmed := meta.FindStatusCondition(o.GatewayAPI.Conditions, string(gwapiv1.GatewayConditionProgrammed))
		var addrs []string
		for _, a := range o.GatewayAPI.Addresses {
			addrs = append(addrs, a.Value)
		}
		got := fmt.Sprintf("accepted=%s programmed=%s/%s %v", accepted.Status, programmed.Status, programmed.Reason, addrs)
		want := "accepted=True programmed=False/AddressNotAssigned []"
		if o.Ref.Name == "new" {
			want = "accepted=True programmed=True/Programmed [192.0.2.7]"
		}
		if got != want {
			t.Errorf("Gateway %s: %s, want %s", o.Ref, got, want)
		}
	}

	// Without the Envoy Service (being recreated, say) nothing is said of
	// the Gateways' Services (nil: their writer keeps them); without
	// Gateways, there are none (empty: it deletes them).
	var noEnvoy objects.Set
	if _, err := noEnvoy.Decode(strings.NewReader(fmt.Sprintf(perGatewayBase, strings.TrimPrefix(newSvc, "a-new-"))), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	noGateways := noEnvoy
	noEnvoy.Services = slices.DeleteFunc(slices.Clone(noEnvoy.Services), func(s *corev1.Service) bool { return s.Name == "envoy" })
	noGateways.Gateways = nil
	opts := core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy", GatewayServicePerGateway: true}
	if got := Build(&noEnvoy, opts).GatewayServices; got != nil {
		t.Errorf("without the Envoy Service: %d services, want nil (unknown)", len(got))
	}
	if got := Build(&noGateways, opts).GatewayServices; got == nil || len(got) != 0 {
		t.Errorf("without Gateways: %v, want an empty set", got)
	}

	// Without the option, the two Gateways of port 80 share Envoy's 8080
	// and the younger one's listener conflicts.
	res = Build(&in, core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy"})
	if len(res.GatewayServices) != 0 {
		t.Errorf("services without the option: %d", len(res.GatewayServices))
	}
	for _, o := range res.Status {
		if o.Ref.Kind == objects.KindGateway && o.Ref.Name == "new" {
			if c := meta.FindStatusCondition(o.GatewayAPI.Conditions, string(gwapiv1.GatewayConditionAccepted)); c.Status != "False" {
				t.Errorf("Gateway a/new shares a/old's listener without the option: %+v", c)
			}
		}
	}
}
