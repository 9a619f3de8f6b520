package builder

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// btlsBase is a Gateway, two Services (secure: ports 443 "https" and 80
// "http"; echo: 80) in namespace apps, and routes of namespace web (a
// ReferenceGrant lets them use apps' Services): an HTTPRoute whose rule
// /split sends to secure:443 and echo:80, whose rule /mirror mirrors to
// secure:443, and a GRPCRoute to secure:443.
const btlsBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: web}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: secure, namespace: apps}
spec: {ports: [{name: https, port: 443}, {name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: apps}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: web, namespace: apps}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: web}, {group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: web}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: http, namespace: web}
spec:
  parentRefs: [{name: gw}]
  hostnames: [http.example.com]
  rules:
  - matches: [{path: {value: /split}}]
    backendRefs:
    - {name: secure, namespace: apps, port: 443}
    - {name: echo, namespace: apps, port: 80}
  - matches: [{path: {value: /mirror}}]
    filters:
    - type: RequestMirror
      requestMirror: {backendRef: {name: secure, namespace: apps, port: 443}}
    backendRefs:
    - {name: echo, namespace: apps, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: web}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - backendRefs: [{name: secure, namespace: apps, port: 443}]
`

// A backend whose Service port a BackendTLSPolicy of the Service's
// namespace targets is invalid (Portcullis does not implement the policy
// and must not speak plaintext to it): its share answers 500, a mirror to
// it is left out, and the routes' ResolvedRefs say why.
func TestBackendTLSPolicyFailsClosed(t *testing.T) {
	policy := func(ns, group, kind, name, section string) string {
		target := fmt.Sprintf("{group: %q, kind: %s, name: %s", group, kind, name)
		if section != "" {
			target += ", sectionName: " + section
		}
		return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: tls, namespace: %s}
spec:
  targetRefs: [%s}]
  validation: {hostname: secure.example.com, wellKnownCACertificates: System}
`, ns, target)
	}
	const fine = "secure:443 echo:80 | mirror secure:443 | grpc secure:443"
	const refused = "echo:80 invalid-backend | mirror - | grpc 500"
	for _, tc := range []struct {
		name, policy string
		want         string
		// refs is the HTTPRoute's ResolvedRefs message ("" for True).
		refs string
	}{
		{"none", "", fine, ""},
		{"the whole Service", policy("apps", "", "Service", "secure", ""), refused,
			`spec.rules[0].backendRefs[0]: Service apps/secure port 443 is targeted by BackendTLSPolicy apps/tls, which is not supported (no TLS to backends): it is not used rather than sent plaintext`},
		{"the port used, by name", policy("apps", "", "Service", "secure", "https"), refused, "BackendTLSPolicy apps/tls"},
		{"another port", policy("apps", "", "Service", "secure", "http"), fine, ""},
		{"a Service of the same name in the routes' namespace", policy("web", "", "Service", "secure", ""), fine, ""},
		{"another Service", policy("apps", "", "Service", "echo", ""), "secure:443 invalid-backend | mirror - | grpc secure:443", "Service apps/echo port 80"},
		{"another kind", policy("apps", "example.com", "Bucket", "secure", ""), fine, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in objects.Set
			if _, err := in.Decode(strings.NewReader(btlsBase+tc.policy), "in.yaml"); err != nil {
				t.Fatal(err)
			}
			in.Sort()
			res := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}})
			if got := btlsSummary(res.Model); got != tc.want {
				t.Errorf("routes = %q, want %q", got, tc.want)
			}
			for _, o := range res.Status {
				if o.Ref.Kind != objects.KindHTTPRoute && o.Ref.Kind != objects.KindGRPCRoute {
					continue
				}
				if len(o.GatewayAPI.Parents) != 1 {
					t.Fatalf("%s: parents %+v", o.Ref, o.GatewayAPI.Parents)
				}
				c := meta.FindStatusCondition(o.GatewayAPI.Parents[0].Conditions, string(gwapiv1.RouteConditionResolvedRefs))
				if tc.refs == "" {
					if c == nil || c.Status != "True" {
						t.Errorf("%s: ResolvedRefs %+v, want True", o.Ref, c)
					}
					continue
				}
				if c == nil || c.Status != "False" || c.Reason != string(gwapiv1.RouteReasonUnsupportedProtocol) {
					if o.Ref.Kind == objects.KindGRPCRoute && tc.name == "another Service" {
						continue // the GRPCRoute does not use echo
					}
					t.Errorf("%s: ResolvedRefs %+v, want False, UnsupportedProtocol", o.Ref, c)
					continue
				}
				if o.Ref.Kind == objects.KindHTTPRoute && !strings.Contains(c.Message, tc.refs) {
					t.Errorf("%s: ResolvedRefs message %q, want it to contain %q", o.Ref, c.Message, tc.refs)
				}
			}
		})
	}
}

// btlsSummary renders the clusters of /split (the invalid share last), the
// mirrors of /mirror (- for none, or when the rule answers 500) and the
// GRPCRoute's clusters (or 500), service/<ns>/<name>/<port>[/protocol]
// written <name>:<port>.
func btlsSummary(m *ir.Model) string {
	short := func(c string) string {
		if parts := strings.Split(c, "/"); len(parts) >= 4 && parts[0] == "service" {
			return parts[2] + ":" + parts[3]
		}
		return c
	}
	routes := map[string]*ir.Route{}
	for _, vh := range m.Listener(ir.HTTPListenerName).Insecure {
		for _, r := range vh.Routes {
			routes[vh.FQDN+r.Path] = r
		}
	}
	clusters := func(r *ir.Route) string {
		if r == nil {
			return "(none)"
		}
		if r.DirectResponse != nil {
			return fmt.Sprint(r.DirectResponse.Status)
		}
		var out []string
		for _, c := range r.Clusters {
			out = append(out, short(c.Cluster))
		}
		return strings.Join(out, " ")
	}
	mirrors := "-"
	if r := routes["http.example.com/mirror"]; r != nil && len(r.Mirrors) > 0 {
		var out []string
		for _, mi := range r.Mirrors {
			out = append(out, short(mi.Cluster))
		}
		mirrors = strings.Join(out, " ")
	}
	var grpc *ir.Route
	for k, r := range routes {
		if strings.HasPrefix(k, "grpc.example.com") {
			grpc = r
		}
	}
	return clusters(routes["http.example.com/split"]) + " | mirror " + mirrors + " | grpc " + clusters(grpc)
}
