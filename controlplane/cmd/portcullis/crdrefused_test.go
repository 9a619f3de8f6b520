package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// webGateway is our GatewayClass, a Gateway "web" with an HTTP listener on
// port 80 and a Service "echo": what the Gateway API tests of translate
// add their objects to.
const webGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec: {ports: [{port: 80}]}
---
`

// TestTranslateRefusesWhatTheCRDRefuses: an object of a file that its
// CRD's schema or CEL rules refuse is not served: its status says
// CRDValidationFailed with the field and the CRD's own message, the other
// objects are served, and --strict fails naming it.
func TestTranslateRefusesWhatTheCRDRefuses(t *testing.T) {
	const base = webGateway + `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: fine}
spec:
  parentRefs: [{name: web}]
  hostnames: [fine.example.com]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
---
`
	const route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: bad}\nspec:\n  parentRefs: [{name: web}]\n  hostnames: [bad.example.com]\n  rules:\n  - backendRefs: [{name: echo, port: 80}]\n"
	for _, tc := range []struct {
		name, in string
		ref      string   // the object --strict names
		want     []string // in its status
	}{
		{"an empty header value (schema)", route + "    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-a, value: \"\"}]}}]\n", "HTTPRoute default/bad",
			[]string{"spec.rules[0].filters[0].requestHeaderModifier.set[0].value", "should be at least 1 chars long"}},
		{"replaceFullPath with ReplacePrefixMatch (CEL)", route + "    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replaceFullPath: /x}}}]\n", "HTTPRoute default/bad",
			[]string{"spec.rules[0].filters[0].urlRewrite.path", "type must be 'ReplaceFullPath' when replaceFullPath is set"}},
		{"a timeout of a fraction of a second (schema pattern)", route + "    timeouts: {request: 1.5s}\n", "HTTPRoute default/bad",
			[]string{"spec.rules[0].timeouts.request", "should match"}},
		{"a redirect with a rewrite (CEL)", route + "    filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}, {type: URLRewrite, urlRewrite: {hostname: a.example.com}}]\n", "HTTPRoute default/bad",
			[]string{"spec.rules[0].filters", "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both"}},
		{"a second Gateway with a listener name twice (CEL)", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: other}\nspec:\n  gatewayClassName: portcullis\n  listeners: [{name: a, port: 81, protocol: HTTP}, {name: a, port: 82, protocol: HTTP}]\n", "Gateway default/other",
			[]string{"spec.listeners", "Listener name must be unique within the Gateway"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(base+tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := run("translate", "-f", path, "-o", "yaml")
			if err != nil {
				t.Fatalf("without --strict: %v (%s)", err, errOut)
			}
			for _, w := range append([]string{"reason: CRDValidationFailed", "refused by the CRD's validation"}, tc.want...) {
				if !strings.Contains(unfold(out), w) {
					t.Errorf("the output lacks %q", w)
				}
			}
			if !strings.Contains(out, "fine.example.com") {
				t.Error("the valid route is not served")
			}
			if _, _, err := run("translate", "--strict", "-f", path); err == nil || !strings.Contains(err.Error(), tc.ref+" is not valid") {
				t.Errorf("--strict: error %v, want one naming %s", err, tc.ref)
			}
		})
	}
}

// unfold joins the lines YAML folds a long string over, and unquotes
// its quotes.
func unfold(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.ReplaceAll(strings.Join(lines, " "), "''", "'")
}
