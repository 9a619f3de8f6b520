package builder

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// udpBase is a GatewayClass, the Services dns (a TCP and a UDP port 53,
// namespace default), stats (UDP 8125, two endpoints), web (TCP 80 only) and resolver (UDP 53, namespace
// infra, with a ReferenceGrant to UDPRoutes of namespace granted), each
// with an endpoint.
const udpBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: default}
spec: {ports: [{name: dns-tcp, port: 53}, {name: dns, port: 53, protocol: UDP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: dns-a, namespace: default, labels: {kubernetes.io/service-name: dns}}
addressType: IPv4
ports: [{name: dns-tcp, port: 53}, {name: dns, port: 53, protocol: UDP}]
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: v1
kind: Service
metadata: {name: stats, namespace: default}
spec: {ports: [{name: statsd, port: 8125, protocol: UDP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: stats-a, namespace: default, labels: {kubernetes.io/service-name: stats}}
addressType: IPv4
ports: [{name: statsd, port: 8125, protocol: UDP}]
endpoints: [{addresses: [10.0.0.2, 10.0.0.3]}]
---
apiVersion: v1
kind: Service
metadata: {name: external, namespace: default}
spec: {type: ExternalName, externalName: dns.example.com, ports: [{name: dns, port: 53, protocol: UDP}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: resolver, namespace: infra}
spec: {ports: [{name: dns, port: 53, protocol: UDP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: resolver-a, namespace: infra, labels: {kubernetes.io/service-name: resolver}}
addressType: IPv4
ports: [{name: dns, port: 53, protocol: UDP}]
endpoints: [{addresses: [10.0.1.1]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: granted, namespace: infra}
spec:
  from: [{group: gateway.networking.k8s.io, kind: UDPRoute, namespace: granted}]
  to: [{group: "", kind: Service}]
`

// udpRoute is a UDPRoute of a namespace and name, created at minute
// (its age), attached to gw's listener section ("" for all), with a
// rule's backendRefs (a YAML flow list).
func udpRoute(ns, name string, minute int, section, backends string) string {
	parent := "{name: gw, namespace: default}"
	if section != "" {
		parent = fmt.Sprintf("{name: gw, namespace: default, sectionName: %s}", section)
	}
	return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: %s, namespace: %s, creationTimestamp: "2024-01-01T00:%02d:00Z"}
spec:
  parentRefs: [%s]
  rules: [{backendRefs: %s}]
`, name, ns, minute, parent, backends)
}

const udpListener = `{name: udp, port: 5300, protocol: UDP, allowedRoutes: {namespaces: {from: All}}}`

// udpWant is what one case expects of a route (by name): its Accepted and
// ResolvedRefs reasons, and a part of its Accepted message ("" for any).
type udpWant struct {
	accepted, resolved, message string
}

// UDP listeners and UDPRoutes: what is served (each Envoy UDP listener's
// cluster and its endpoints' groups and weights), the first listener's
// Accepted and Conflicted reasons, and each route's conditions.
func TestUDPRoute(t *testing.T) {
	dns := `[{name: dns, port: 53}]`
	for _, tc := range []struct {
		name      string
		listeners string
		routes    string
		// served is "<listener>=<cluster>[<group>*<weight> ...]; ..."
		served                       string
		listenerAccepted, conflicted string
		routes2                      map[string]udpWant
		idle                         time.Duration
	}{
		{"the Service's UDP port, on a listener of its own", udpListener,
			udpRoute("default", "r", 0, "udp", dns),
			"udp-5300=service/default/dns/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"weighted across namespaces (granted): one cluster, weights per Service, weight 0 left out", udpListener,
			udpRoute("granted", "r", 0, "udp", `[{name: dns, namespace: default, port: 53, weight: 0}, {name: resolver, namespace: infra, port: 53, weight: 7}]`),
			"udp-5300=service/infra/resolver/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "RefNotPermitted", ""}}, 0},
		{"two weighted Services: the weights are the Services', whatever their endpoints", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: dns, port: 53, weight: 70}, {name: stats, port: 8125, weight: 30}]`),
			"udp-5300=udp/[default/dns:53*70 default/stats:8125*30 default/stats:8125*30]", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"a Service twice: its weights add up", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: dns, port: 53, weight: 2}, {name: stats, port: 8125, weight: 3}, {name: dns, port: 53, weight: 5}]`),
			"udp-5300=udp/[default/dns:53*7 default/stats:8125*3 default/stats:8125*3]", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"the oldest route serves the listener; the younger is Accepted, and told", udpListener,
			udpRoute("default", "young", 5, "udp", `[{name: resolver, namespace: infra, port: 53}]`) + udpRoute("granted", "old", 1, "udp", `[{name: resolver, namespace: infra, port: 53}]`),
			"udp-5300=service/infra/resolver/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"old": {"Accepted", "ResolvedRefs", "accepted"}, "young": {"Accepted", "RefNotPermitted", "UDPRoute granted/old, older, serves"}}, 0},
		{"a Service with a TCP port of that number only", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: web, port: 80}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "BackendNotFound", ""}}, 0},
		{"a missing Service", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: nowhere, port: 53}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "BackendNotFound", ""}}, 0},
		{"another namespace without a grant", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: resolver, namespace: infra, port: 53}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "RefNotPermitted", ""}}, 0},
		{"not a Service", udpListener,
			udpRoute("default", "r", 0, "udp", `[{group: projectcontour.io, kind: ExtensionService, name: dns}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "InvalidKind", ""}}, 0},
		{"an invalid backend with weight drops every datagram, the valid one's too", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: dns, port: 53, weight: 9}, {name: nowhere, port: 53, weight: 1}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "BackendNotFound", ""}}, 0},
		{"an ExternalName Service alone: its DNS name", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: external, port: 53}]`),
			"udp-5300=service/default/external/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"an ExternalName Service weighted with others drops every datagram", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: external, port: 53}, {name: dns, port: 53}]`),
			"udp-5300=invalid-backend", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "UnsupportedValue", ""}}, 0},
		{"an invalid backend of weight 0 takes nothing", udpListener,
			udpRoute("default", "r", 0, "udp", `[{name: dns, port: 53}, {name: nowhere, port: 53, weight: 0}]`),
			"udp-5300=service/default/dns/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "BackendNotFound", ""}}, 0},
		{"a UDP and a TCP listener of one port are distinct, both served", udpListener + `, {name: tcp, port: 5300, protocol: TCP}`,
			udpRoute("default", "r", 0, "", dns) + streamRoute("TCPRoute", "default", "t", "", dns),
			"tcp-5300; udp-5300=service/default/dns/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"two UDP listeners of one port are not distinct: neither is served", udpListener + `, {name: udp2, port: 5300, protocol: UDP}`,
			udpRoute("default", "r", 0, "", dns),
			"", "Accepted", "HostnameConflict",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"UDP on port 80: beside the shared HTTP listener's TCP socket", `{name: udp, port: 80, protocol: UDP}`,
			udpRoute("default", "r", 0, "udp", dns),
			"udp-8080=service/default/dns/53/udp", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 0},
		{"tls is refused", `{name: udp, port: 5300, protocol: UDP, tls: {mode: Passthrough}}`,
			udpRoute("default", "r", 0, "udp", dns),
			"", "UnsupportedValue", "NoConflicts",
			map[string]udpWant{"r": {"NotAllowedByListeners", "ResolvedRefs", ""}}, 0},
		{"a UDPRoute is not allowed on a TCP listener", `{name: tcp, port: 5300, protocol: TCP}`,
			udpRoute("default", "r", 0, "tcp", dns),
			"", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"NotAllowedByListeners", "ResolvedRefs", ""}}, 0},
		{"a TCPRoute is not allowed on a UDP listener", udpListener,
			streamRoute("TCPRoute", "default", "t", "", dns),
			"", "Accepted", "NoConflicts",
			map[string]udpWant{"t": {"NotAllowedByListeners", "ResolvedRefs", ""}}, 0},
		{"the idle timeout configured", udpListener,
			udpRoute("default", "r", 0, "udp", dns),
			"udp-5300=service/default/dns/53/udp idle=3s", "Accepted", "NoConflicts",
			map[string]udpWant{"r": {"Accepted", "ResolvedRefs", ""}}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in objects.Set
			if _, err := in.Decode(strings.NewReader(udpBase+streamGateway(tc.listeners)+tc.routes), "in.yaml"); err != nil {
				t.Fatal(err)
			}
			// The builder's own rules: the CRD refuses some of these
			// Gateways, a cluster's older CRDs may not.
			in.DropCRDComplaints()
			in.Sort()
			res := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}, HTTPS: core.Bind{Port: 8443}, UDPSessionIdleTimeout: tc.idle, ExternalNameServices: true})
			if got := udpSummary(res.Model); got != tc.served {
				t.Errorf("served %q, want %q", got, tc.served)
			}
			for _, o := range res.Status {
				switch o.Ref.Kind {
				case objects.KindGateway:
					conds := o.GatewayAPI.Listeners[0].Conditions
					for typ, want := range map[gwapiv1.ListenerConditionType]string{gwapiv1.ListenerConditionAccepted: tc.listenerAccepted, gwapiv1.ListenerConditionConflicted: tc.conflicted} {
						if c := meta.FindStatusCondition(conds, string(typ)); c == nil || c.Reason != want {
							t.Errorf("listener %s %+v, want reason %s", typ, c, want)
						}
					}
				case objects.KindUDPRoute, objects.KindTCPRoute:
					want, ok := tc.routes2[o.Ref.Name]
					if !ok {
						continue
					}
					conds := o.GatewayAPI.Parents[0].Conditions
					acc := meta.FindStatusCondition(conds, string(gwapiv1.RouteConditionAccepted))
					if acc == nil || acc.Reason != want.accepted || !strings.Contains(acc.Message, want.message) {
						t.Errorf("%s: Accepted %+v, want reason %s, message with %q", o.Ref, acc, want.accepted, want.message)
					}
					if c := meta.FindStatusCondition(conds, string(gwapiv1.RouteConditionResolvedRefs)); c == nil || c.Reason != want.resolved {
						t.Errorf("%s: ResolvedRefs %+v, want reason %s", o.Ref, c, want.resolved)
					}
				}
			}
		})
	}
}

// udpSummary renders the Gateway's UDP listeners (their cluster; a
// weighted cluster's groups and weights; a timeout other than the
// default) and the names of its TCP listeners.
func udpSummary(m *ir.Model) string {
	clusters := map[string]*ir.Cluster{}
	for _, c := range m.Clusters {
		clusters[c.Name] = c
	}
	var out []string
	for _, l := range m.Listeners {
		switch {
		case l.UDP != nil:
			s := l.Name + "=" + l.UDP.Cluster
			if c := clusters[l.UDP.Cluster]; c != nil && c.LocalityWeighted {
				var groups []string
				for _, e := range c.Endpoints {
					groups = append(groups, fmt.Sprintf("%s*%d", e.Group, e.Weight))
				}
				slices.Sort(groups)
				s = l.Name + "=udp/[" + strings.Join(groups, " ") + "]"
			}
			if l.UDP.IdleTimeout != time.Minute {
				s += " idle=" + l.UDP.IdleTimeout.String()
			}
			out = append(out, s)
		case len(l.TCPHosts) > 0:
			out = append(out, l.Name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// With gateway.servicePerGateway, a Gateway's Service has a port of
// protocol UDP for its UDP listeners' port, and one of protocol TCP for
// its other listeners', both to the Envoy port of the listener port: its
// UDP and TCP listeners there.
func TestServicePerGatewayUDP(t *testing.T) {
	in := udpBase + `
---
apiVersion: v1
kind: Service
metadata: {name: envoy, namespace: portcullis}
spec: {type: ClusterIP, selector: {app: envoy}, ports: [{name: http, port: 80, targetPort: 8080}]}
` + streamGateway(`{name: udp, port: 53, protocol: UDP}, {name: tcp, port: 53, protocol: TCP}, {name: web, port: 80, protocol: HTTP}, {name: stats, port: 8125, protocol: UDP}`) +
		udpRoute("default", "r", 0, "udp", `[{name: dns, port: 53}]`) + udpRoute("default", "s", 0, "stats", `[{name: stats, port: 8125}]`) +
		streamRoute("TCPRoute", "default", "t", "", `[{name: dns, port: 53}]`)
	var set objects.Set
	if _, err := set.Decode(strings.NewReader(in), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	set.Sort()
	res := Build(&set, core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy", GatewayServicePerGateway: true})
	if len(res.GatewayServices) != 1 {
		t.Fatalf("services %v", res.GatewayServices)
	}
	var ports []string
	envoyPort := map[string]string{}
	for _, p := range res.GatewayServices[0].Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s/%s:%d", p.Name, p.Protocol, p.Port))
		envoyPort[p.Name] = p.TargetPort.String()
	}
	if want := []string{"port-53/TCP:53", "udp-53/UDP:53", "port-80/TCP:80", "udp-8125/UDP:8125"}; !slices.Equal(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
	if envoyPort["port-53"] != envoyPort["udp-53"] {
		t.Errorf("TCP 53 to Envoy's %s, UDP 53 to %s: want one Envoy port (two sockets)", envoyPort["port-53"], envoyPort["udp-53"])
	}
	var listeners []string
	for _, l := range res.Model.Listeners {
		if !l.Shared() {
			listeners = append(listeners, l.Name)
		}
	}
	slices.Sort(listeners)
	if want := []string{"tcp-" + envoyPort["port-53"], "udp-" + envoyPort["udp-53"], "udp-" + envoyPort["udp-8125"]}; !slices.Equal(listeners, want) {
		t.Errorf("listeners %v, want %v", listeners, want)
	}
}

// The sessions of a UDP listener are bounded by its cluster's
// max_connections circuit breaker: the Service's
// projectcontour.io/max-connections for one backend, the tightest of the
// Services' for several (none: Envoy's default, 1024).
func TestUDPSessionsBounded(t *testing.T) {
	annotated := func(name string, port, max int) string {
		return fmt.Sprintf(`
---
apiVersion: v1
kind: Service
metadata: {name: %s, namespace: default, annotations: {projectcontour.io/max-connections: "%d"}}
spec: {ports: [{name: p, port: %d, protocol: UDP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: %[1]s-a, namespace: default, labels: {kubernetes.io/service-name: %[1]s}}
addressType: IPv4
ports: [{name: p, port: %[3]d, protocol: UDP}]
endpoints: [{addresses: [10.0.2.1]}]
`, name, max, port)
	}
	for _, tc := range []struct {
		name, backends string
		want           uint32
	}{
		{"one backend: its Service's", `[{name: a100, port: 53}]`, 100},
		{"several: the tightest", `[{name: a100, port: 53}, {name: b50, port: 54}, {name: dns, port: 53}]`, 50},
		{"none annotated: Envoy's default", `[{name: dns, port: 53}, {name: stats, port: 8125}]`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in objects.Set
			src := udpBase + annotated("a100", 53, 100) + annotated("b50", 54, 50) + streamGateway(udpListener) + udpRoute("default", "r", 0, "udp", tc.backends)
			if _, err := in.Decode(strings.NewReader(src), "in.yaml"); err != nil {
				t.Fatal(err)
			}
			in.Sort()
			m := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}}).Model
			l := m.Listener("udp-5300")
			if l == nil || l.UDP == nil {
				t.Fatalf("no UDP listener: %+v", m.Listeners)
			}
			for _, c := range m.Clusters {
				if c.Name != l.UDP.Cluster {
					continue
				}
				var got uint32
				if c.CircuitBreakers != nil {
					got = c.CircuitBreakers.MaxConnections
				}
				if got != tc.want {
					t.Errorf("cluster %s: max_connections %d, want %d", c.Name, got, tc.want)
				}
				return
			}
			t.Fatalf("cluster %s not in the model", l.UDP.Cluster)
		})
	}
}
