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
	"github.com/portcullis/portcullis/controlplane/internal/status"
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

// btlsCA is a ConfigMap and a Secret of namespace apps holding a CA
// certificate (ca.crt), and a ConfigMap without one.
func btlsCA(t *testing.T) string {
	ca := "    " + strings.ReplaceAll(strings.TrimSpace(string(testCAPEM(t))), "\n", "\n    ")
	return `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: apps}
data:
  ca.crt: |
` + ca + `
---
apiVersion: v1
kind: Secret
metadata: {name: ca, namespace: apps}
stringData:
  ca.crt: |
` + ca + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: apps}
data: {}
`
}

// A backend whose Service port a BackendTLSPolicy of the Service's
// namespace targets is spoken TLS to, verified as the policy says (the
// protocol after the port: tls, h2 for the GRPCRoute); while the policy
// cannot be honoured it is invalid: its share answers 500, a mirror to it
// is left out, the routes' ResolvedRefs say why, and the policy's status
// says what to fix. Everything else is unaffected.
func TestBackendTLSPolicy(t *testing.T) {
	policy := func(ns, group, kind, name, section, validation string) string {
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
  validation: %s
`, ns, target, validation)
	}
	const (
		system    = "{hostname: secure.example.com, wellKnownCACertificates: System}"
		configMap = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]}`
		secret    = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: Secret, name: ca}]}`
		sans      = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}], subjectAltNames: [{type: URI, uri: "spiffe://apps/secure"}]}`
		missing   = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: nope}]}`
		empty     = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: empty}]}`
		wrongKind = `{hostname: secure.example.com, caCertificateRefs: [{group: example.com, kind: Bundle, name: ca}]}`
		oneBad    = `{hostname: secure.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: nope}, {group: "", kind: Secret, name: ca}]}`
	)
	const fine = "secure:443 echo:80 | mirror secure:443 | grpc secure:443/h2c"
	const tls = "secure:443/tls echo:80 | mirror secure:443/tls | grpc secure:443/h2"
	const refused = "echo:80 invalid-backend | mirror - | grpc 500"
	for _, tc := range []struct {
		name, policy string
		want         string
		// refs is the HTTPRoute's ResolvedRefs message ("" for True).
		refs string
		// accepted and resolved are the policy's conditions' reasons at
		// the Gateway ("" for no ancestor).
		accepted, resolved string
		// validation is the cluster of secure:443's (HTTPRoute).
		validation string
	}{
		{name: "none", want: fine},
		{name: "a ConfigMap's CA, the whole Service", policy: policy("apps", "", "Service", "secure", "", configMap), want: tls,
			accepted: "Accepted", resolved: "ResolvedRefs", validation: "apps/tls/backendtlspolicy secure.example.com [] []"},
		{name: "a Secret's CA, the port used, by name", policy: policy("apps", "", "Service", "secure", "https", secret), want: tls,
			accepted: "Accepted", resolved: "ResolvedRefs", validation: "apps/tls/backendtlspolicy secure.example.com [] []"},
		{name: "SANs", policy: policy("apps", "", "Service", "secure", "", sans), want: tls,
			accepted: "Accepted", resolved: "ResolvedRefs", validation: "apps/tls/backendtlspolicy secure.example.com [] [spiffe://apps/secure]"},
		{name: "one bad CA reference of two", policy: policy("apps", "", "Service", "secure", "", oneBad), want: tls,
			accepted: "Accepted", resolved: "InvalidCACertificateRef", validation: "apps/tls/backendtlspolicy secure.example.com [] []"},
		{name: "system roots, none configured", policy: policy("apps", "", "Service", "secure", "", system), want: refused,
			refs: "BackendTLSPolicy apps/tls, which applies to it, is invalid", accepted: "Invalid", resolved: "ResolvedRefs"},
		{name: "a missing ConfigMap", policy: policy("apps", "", "Service", "secure", "", missing), want: refused,
			refs: "ConfigMap apps/nope not found", accepted: "NoValidCACertificate", resolved: "InvalidCACertificateRef"},
		{name: "a ConfigMap without ca.crt", policy: policy("apps", "", "Service", "secure", "", empty), want: refused,
			refs: "no valid PEM certificate", accepted: "NoValidCACertificate", resolved: "InvalidCACertificateRef"},
		{name: "a CA of a wrong kind", policy: policy("apps", "", "Service", "secure", "", wrongKind), want: refused,
			refs: "kind Bundle of group", accepted: "NoValidCACertificate", resolved: "InvalidKind"},
		{name: "another port", policy: policy("apps", "", "Service", "secure", "http", configMap), want: fine},
		{name: "a Service of the same name in the routes' namespace", policy: policy("web", "", "Service", "secure", "", configMap), want: fine},
		{name: "another Service, invalid", policy: policy("apps", "", "Service", "echo", "", missing), want: "secure:443 invalid-backend | mirror - | grpc secure:443/h2c",
			refs: "Service apps/echo port 80", accepted: "NoValidCACertificate", resolved: "InvalidCACertificateRef"},
		{name: "another kind", policy: policy("apps", "example.com", "Bucket", "secure", "", configMap), want: fine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in objects.Set
			if _, err := in.Decode(strings.NewReader(btlsBase+btlsCA(t)+tc.policy), "in.yaml"); err != nil {
				t.Fatal(err)
			}
			in.Sort()
			res := Build(&in, core.Options{HTTP: core.Bind{Port: 8080}})
			if got := btlsSummary(res.Model); got != tc.want {
				t.Errorf("routes = %q, want %q", got, tc.want)
			}
			if tc.validation != "" {
				var got string
				for _, c := range res.Model.Clusters {
					if v := c.Validation; strings.HasPrefix(c.Name, "service/apps/secure/443/tls/") && v != nil {
						got = fmt.Sprintf("%s %s %v %v", v.CASecret, v.SubjectName, v.SubjectNames, v.SubjectURIs)
						if c.SNI != "secure.example.com" {
							t.Errorf("SNI %q, want secure.example.com", c.SNI)
						}
					}
				}
				if got != tc.validation {
					t.Errorf("validation %q, want %q", got, tc.validation)
				}
			}
			for _, o := range res.Status {
				switch o.Ref.Kind {
				case objects.KindBackendTLSPolicy:
					checkBTLSAncestor(t, o.GatewayAPI.Ancestors, tc.accepted, tc.resolved)
				case objects.KindHTTPRoute, objects.KindGRPCRoute:
					checkBTLSRefs(t, o, tc.name, tc.refs)
				}
			}
		})
	}
}

// checkBTLSAncestor checks a policy's one ancestor, the Gateway web/gw,
// whose Accepted and ResolvedRefs reasons are accepted and resolved (no
// ancestor when accepted is "").
func checkBTLSAncestor(t *testing.T, ancestors []gwapiv1.PolicyAncestorStatus, accepted, resolved string) {
	t.Helper()
	if accepted == "" {
		if len(ancestors) != 0 {
			t.Errorf("ancestors %+v, want none", ancestors)
		}
		return
	}
	if len(ancestors) != 1 || ancestors[0].AncestorRef.Name != "gw" || string(*ancestors[0].AncestorRef.Namespace) != "web" {
		t.Fatalf("ancestors %+v, want the Gateway web/gw", ancestors)
	}
	for typ, want := range map[string]string{"Accepted": accepted, "ResolvedRefs": resolved} {
		c := meta.FindStatusCondition(ancestors[0].Conditions, typ)
		if c == nil || c.Reason != want || (c.Status == "True") != (want == "Accepted" || want == "ResolvedRefs") {
			t.Errorf("%s %+v, want reason %s", typ, c, want)
		}
	}
}

// checkBTLSRefs checks a route's ResolvedRefs: True when refs is "", else
// False (UnsupportedProtocol) with a message containing refs.
func checkBTLSRefs(t *testing.T, o *status.Object, name, refs string) {
	t.Helper()
	if len(o.GatewayAPI.Parents) != 1 {
		t.Fatalf("%s: parents %+v", o.Ref, o.GatewayAPI.Parents)
	}
	c := meta.FindStatusCondition(o.GatewayAPI.Parents[0].Conditions, string(gwapiv1.RouteConditionResolvedRefs))
	if refs == "" || (o.Ref.Kind == objects.KindGRPCRoute && strings.HasPrefix(name, "another Service")) {
		// (The GRPCRoute does not use echo.)
		if c == nil || c.Status != "True" {
			t.Errorf("%s: ResolvedRefs %+v, want True", o.Ref, c)
		}
		return
	}
	if c == nil || c.Status != "False" || c.Reason != string(gwapiv1.RouteReasonUnsupportedProtocol) {
		t.Errorf("%s: ResolvedRefs %+v, want False, UnsupportedProtocol", o.Ref, c)
		return
	}
	if o.Ref.Kind == objects.KindHTTPRoute && !strings.Contains(c.Message, refs) {
		t.Errorf("%s: ResolvedRefs message %q, want it to contain %q", o.Ref, c.Message, refs)
	}
}

// btlsSummary renders the clusters of /split (the invalid share last), the
// mirrors of /mirror (- for none, or when the rule answers 500) and the
// GRPCRoute's clusters (or 500), service/<ns>/<name>/<port>[/protocol]
// written <name>:<port>[/protocol].
func btlsSummary(m *ir.Model) string {
	short := func(c string) string {
		parts := strings.Split(c, "/")
		switch {
		case len(parts) >= 5 && parts[0] == "service":
			return parts[2] + ":" + parts[3] + "/" + parts[4]
		case len(parts) >= 4 && parts[0] == "service":
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
