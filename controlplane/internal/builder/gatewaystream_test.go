package builder

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// streamBase (after testdata/common's Secrets, echo's certificate among
// them) is a GatewayClass, the Services echo (port 80, namespace
// default) and db (5432, namespace data), and a ReferenceGrant of data
// to TLSRoutes of namespace granted.
const streamBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: data}
spec: {ports: [{port: 5432, appProtocol: kubernetes.io/h2c}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: granted, namespace: data}
spec:
  from: [{group: gateway.networking.k8s.io, kind: TLSRoute, namespace: granted}]
  to: [{group: "", kind: Service}]
`

// streamGateway is a Gateway of namespace default with one listener.
func streamGateway(listener string) string {
	return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: portcullis
  listeners: [%s]
`, listener)
}

// streamRoute is a route of a kind, namespace and name attached to gw,
// with hostnames (none for "") and a rule's backendRefs (YAML flow
// lists).
func streamRoute(kind, ns, name, hostnames, backends string) string {
	if hostnames != "" {
		hostnames = "\n  hostnames: " + hostnames
	}
	return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: %s
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: [{name: gw, namespace: default}]%s
  rules: [{backendRefs: %s}]
`, kind, name, ns, hostnames, backends)
}

const passthrough = `{name: tls, port: 9443, protocol: TLS, hostname: "*.example.com", tls: {mode: Passthrough}, allowedRoutes: {namespaces: {from: All}}}`

// TLS listeners and TLSRoutes: what is served (each Envoy listener's TCP
// hosts and their clusters), the listener's Accepted and the route's
// Accepted and ResolvedRefs reasons.
func TestTLSRoutePassthrough(t *testing.T) {
	echo := `[{name: echo, port: 80}]`
	for _, tc := range []struct {
		name, listener, routes string
		// served is "<listener> <fqdn>=<clusters> ..." (clusters written
		// <name>:<port>), "" for nothing.
		served             string
		listenerReason     string
		accepted, resolved string
	}{
		{"hostnames intersected with the listener's, each its own SNI match", passthrough,
			streamRoute("TLSRoute", "default", "r", `[a.example.com, "*.example.com", b.example.org]`, echo),
			"https-9443 *.example.com=echo:80 a.example.com=echo:80", "Accepted", "Accepted", "ResolvedRefs"},
		{"no hostname on either side: any SNI name (older CRDs only: the CRD requires hostnames)", `{name: tls, port: 9443, protocol: TLS, tls: {mode: Passthrough}}`,
			streamRoute("TLSRoute", "default", "r", `[]`, echo),
			"https-9443 *=echo:80", "Accepted", "Accepted", "ResolvedRefs"},
		{"no hostname in common", passthrough,
			streamRoute("TLSRoute", "default", "r", `[a.example.org]`, echo),
			"", "Accepted", "NoMatchingListenerHostname", "ResolvedRefs"},
		{"weighted backends; the Service's protocol not applied", passthrough,
			streamRoute("TLSRoute", "granted", "r", `[a.example.com]`, `[{name: echo, namespace: default, port: 80, weight: 0}, {name: db, namespace: data, port: 5432, weight: 2}]`),
			"https-9443 a.example.com=db:5432", "Accepted", "Accepted", "RefNotPermitted"},
		{"a missing backend: connections closed", passthrough,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, `[{name: nowhere, port: 443}]`),
			"https-9443 a.example.com=invalid-backend", "Accepted", "Accepted", "BackendNotFound"},
		{"a backend of another namespace without a grant", passthrough,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, `[{name: db, namespace: data, port: 5432}]`),
			"https-9443 a.example.com=invalid-backend", "Accepted", "Accepted", "RefNotPermitted"},
		{"a backend of an unknown kind", passthrough,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, `[{group: example.com, kind: Bucket, name: b}]`),
			"https-9443 a.example.com=invalid-backend", "Accepted", "Accepted", "InvalidKind"},
		{"granted", passthrough,
			streamRoute("TLSRoute", "granted", "r", `[a.example.com]`, `[{name: db, namespace: data, port: 5432}]`),
			"https-9443 a.example.com=db:5432", "Accepted", "Accepted", "ResolvedRefs"},
		{"mode Terminate: Envoy's certificate, the decrypted stream to the backends", `{name: tls, port: 9443, protocol: TLS, tls: {mode: Terminate, certificateRefs: [{name: echo}]}}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"https-9443 a.example.com=echo:80+default/echo", "Accepted", "Accepted", "ResolvedRefs"},
		{"mode unset is Terminate", `{name: tls, port: 9443, protocol: TLS, tls: {certificateRefs: [{name: echo}]}}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"https-9443 a.example.com=echo:80+default/echo", "Accepted", "Accepted", "ResolvedRefs"},
		{"mode Terminate with a missing certificate: not served", `{name: tls, port: 9443, protocol: TLS, tls: {certificateRefs: [{name: missing}]}}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"", "Accepted", "Accepted", "ResolvedRefs"},
		{"no tls: refused", `{name: tls, port: 9443, protocol: TLS}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"", "UnsupportedValue", "NotAllowedByListeners", "ResolvedRefs"},
		{"certificateRefs with Passthrough: refused", `{name: tls, port: 9443, protocol: TLS, tls: {mode: Passthrough, certificateRefs: [{name: echo}]}}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"", "UnsupportedValue", "NotAllowedByListeners", "ResolvedRefs"},
		{"an HTTPRoute is not allowed on a TLS listener", passthrough,
			streamRoute("HTTPRoute", "default", "r", `[a.example.com]`, echo),
			"", "Accepted", "NotAllowedByListeners", "ResolvedRefs"},
		{"a TLSRoute is not allowed on an HTTPS listener", `{name: https, port: 9443, protocol: HTTPS, tls: {certificateRefs: [{name: echo}]}}`,
			streamRoute("TLSRoute", "default", "r", `[a.example.com]`, echo),
			"", "Accepted", "NotAllowedByListeners", "ResolvedRefs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkStream(t, tc.listener, tc.routes, tc.served, tc.listenerReason, tc.accepted, tc.resolved)
		})
	}
}

// checkStream builds streamBase, a Gateway of the listener and the
// routes, and checks what is served (streamSummary), the listener's
// Accepted reason and each route's Accepted and ResolvedRefs reasons.
func checkStream(t *testing.T, listener, routes, served, listenerReason, accepted, resolved string) {
	t.Helper()
	var in objects.Set
	secrets, err := os.ReadFile("../pipeline/testdata/common/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Decode(strings.NewReader(string(secrets)+"\n---"+streamBase+streamGateway(listener)+routes), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	// The builder's own rules: some of these Gateways and routes the
	// CRDs refuse (as files, objects.TestDecodeRefusesWhatTheCRDRefuses),
	// a cluster's older CRDs may not.
	in.DropCRDComplaints()
	in.Sort()
	res := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}, HTTPS: core.Bind{Port: 8443}})
	if got := streamSummary(res.Model); got != served {
		t.Errorf("served %q, want %q", got, served)
	}
	for _, o := range res.Status {
		switch o.Ref.Kind {
		case objects.KindGateway:
			c := meta.FindStatusCondition(o.GatewayAPI.Listeners[0].Conditions, string(gwapiv1.ListenerConditionAccepted))
			if c == nil || c.Reason != listenerReason {
				t.Errorf("listener Accepted %+v, want reason %s", c, listenerReason)
			}
		case objects.KindTLSRoute, objects.KindTCPRoute, objects.KindHTTPRoute:
			if len(o.GatewayAPI.Parents) != 1 {
				t.Fatalf("%s: parents %+v", o.Ref, o.GatewayAPI.Parents)
			}
			conds := o.GatewayAPI.Parents[0].Conditions
			for typ, want := range map[gwapiv1.RouteConditionType]string{gwapiv1.RouteConditionAccepted: accepted, gwapiv1.RouteConditionResolvedRefs: resolved} {
				if c := meta.FindStatusCondition(conds, string(typ)); c == nil || c.Reason != want {
					t.Errorf("%s: %s %+v, want reason %s", o.Ref, typ, c, want)
				}
			}
		}
	}
}

// streamSummary renders the TCP hosts of the Gateway's listeners.
func streamSummary(m *ir.Model) string {
	var out []string
	for _, l := range m.Listeners {
		if len(l.TCPHosts) == 0 {
			continue
		}
		hosts := []string{l.Name}
		for _, h := range l.TCPHosts {
			var cs []string
			for _, c := range h.Clusters {
				name := c.Cluster
				if parts := strings.Split(name, "/"); len(parts) >= 4 && parts[0] == "service" {
					name = parts[2] + ":" + parts[3]
				}
				cs = append(cs, name)
			}
			host := h.FQDN + "=" + strings.Join(cs, ",")
			if !h.Passthrough {
				host += "+" + h.Secret
			}
			hosts = append(hosts, host)
		}
		out = append(out, strings.Join(hosts, " "))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TCP listeners and TCPRoutes, as TestTLSRoutePassthrough.
func TestTCPRoute(t *testing.T) {
	echo := `[{name: echo, port: 80}]`
	tcp := `{name: tcp, port: 5432, protocol: TCP, allowedRoutes: {namespaces: {from: All}}}`
	for _, tc := range []struct {
		name, listener, routes             string
		served                             string
		listenerReason, accepted, resolved string
	}{
		{"every connection, on a listener of its own", tcp,
			streamRoute("TCPRoute", "default", "r", "", echo),
			"tcp-5432 *=echo:80", "Accepted", "Accepted", "ResolvedRefs"},
		{"a hostname of the listener is ignored", `{name: tcp, port: 5432, protocol: TCP, hostname: db.example.com}`,
			streamRoute("TCPRoute", "default", "r", "", echo),
			"tcp-5432 *=echo:80", "Accepted", "Accepted", "ResolvedRefs"},
		{"a missing backend: connections closed", tcp,
			streamRoute("TCPRoute", "default", "r", "", `[{name: nowhere, port: 443}]`),
			"tcp-5432 *=invalid-backend", "Accepted", "Accepted", "BackendNotFound"},
		{"a backend of another namespace without a grant (the grant is TLSRoutes')", tcp,
			streamRoute("TCPRoute", "granted", "r", "", `[{name: db, namespace: data, port: 5432}]`),
			"tcp-5432 *=invalid-backend", "Accepted", "Accepted", "RefNotPermitted"},
		{"tls is refused", `{name: tcp, port: 5432, protocol: TCP, tls: {mode: Passthrough}}`,
			streamRoute("TCPRoute", "default", "r", "", echo),
			"", "UnsupportedValue", "NotAllowedByListeners", "ResolvedRefs"},
		{"on the shared HTTP port: a protocol conflict", `{name: tcp, port: 80, protocol: TCP}`,
			streamRoute("TCPRoute", "default", "r", "", echo),
			"", "Accepted", "Accepted", "ResolvedRefs"},
		{"a TCPRoute is not allowed on a TLS listener", passthrough,
			streamRoute("TCPRoute", "default", "r", "", echo),
			"", "Accepted", "NotAllowedByListeners", "ResolvedRefs"},
		{"an HTTPRoute is not allowed on a TCP listener", tcp,
			streamRoute("HTTPRoute", "default", "r", "", echo),
			"", "Accepted", "NotAllowedByListeners", "ResolvedRefs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkStream(t, tc.listener, tc.routes, tc.served, tc.listenerReason, tc.accepted, tc.resolved)
		})
	}
}
