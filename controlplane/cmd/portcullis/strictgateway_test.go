package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateStrictFailsOnGatewayAPIConditions: a Gateway API object
// whose conditions say it, a listener or a parent of it is not served as
// written fails --strict, naming the object and the condition; a route
// served fails nothing.
func TestTranslateStrictFailsOnGatewayAPIConditions(t *testing.T) {
	route := func(parent, backend string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs: [" + parent + "]\n  rules: [{backendRefs: [{name: " + backend + ", port: 80}]}]\n"
	}
	for _, tc := range []struct {
		name, in string
		want     string // in --strict's error; "" for none
	}{
		{"a route served", route("{name: web}", "echo"), ""},
		{"a route naming a listener the Gateway lacks", route("{name: web, sectionName: nosuch}", "echo"),
			"HTTPRoute default/r is not valid: parent web: Accepted False (NoMatchingParent)"},
		{"a route whose backend is missing", route("{name: web}", "missing"),
			"HTTPRoute default/r is not valid: parent web: ResolvedRefs False (BackendNotFound)"},
		{"two listeners of one port and host", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: twice}\nspec:\n  gatewayClassName: portcullis\n  listeners: [{name: a, port: 81, protocol: HTTP}, {name: b, port: 81, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}]\n",
			"Gateway default/twice is not valid: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(webGateway+tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, errOut, err := run("translate", "-f", path); err != nil {
				t.Fatalf("without --strict: %v (%s)", err, errOut)
			}
			_, _, err := run("translate", "--strict", "-f", path)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("--strict failed on a served route: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("--strict: error %v, want one with %q", err, tc.want)
			}
		})
	}
}
