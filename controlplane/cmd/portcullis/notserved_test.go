package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateSaysWhatIsNotServed: what was meant for portcullis but is
// not served (a version of a Gateway API kind it does not read, a
// misspelt kind of its groups, a Gateway without its class, a ListenerSet
// without its Gateway) gets a note
// naming it and what to do, and --strict fails on it; a document of
// another group, or another controller's class, is only noted.
func TestTranslateSaysWhatIsNotServed(t *testing.T) {
	const class = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
`
	for _, tc := range []struct {
		name, in string
		note     string // in stderr
		fails    bool   // with --strict
	}{
		{"v1alpha2 HTTPRoute", class + "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: HTTPRoute\nmetadata: {name: r}\nspec: {}\n",
			"v1alpha2 HTTPRoute is not read: write it as gateway.networking.k8s.io/v1", true},
		{"v1alpha2 ReferenceGrant", class + "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: ReferenceGrant\nmetadata: {name: g}\nspec: {}\n",
			"v1alpha2 ReferenceGrant is not read: write it as gateway.networking.k8s.io/v1", true},
		{"v1beta1 GRPCRoute", class + "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: GRPCRoute\nmetadata: {name: r}\nspec: {}\n",
			"v1beta1 GRPCRoute is not read: write it as gateway.networking.k8s.io/v1", true},
		{"a misspelt kind", "apiVersion: projectcontour.io/v1\nkind: HttpProxy\nmetadata: {name: p}\nspec: {}\n",
			`projectcontour.io has no kind "HttpProxy": kinds are case-sensitive, did you mean HTTPProxy`, true},
		{"a kind of a Gateway API group not read", "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: BackendLBPolicy\nmetadata: {name: r}\nspec: {}\n",
			"kind BackendLBPolicy of gateway.networking.k8s.io is not read by portcullis", true},
		{"a ListenerSet without its Gateway", class + "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls, namespace: team}\nspec: {parentRef: {name: gw, namespace: infra}, listeners: [{name: http, port: 80, protocol: HTTP}]}\n",
			"ListenerSet team/ls (ListenerSet): its parent Gateway infra/gw is not in the input: nothing serves its listeners", true},
		{"a ListenerSet whose parent is not a Gateway", class + "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: ls}\nspec: {parentRef: {kind: ListenerSet, name: other}, listeners: [{name: http, port: 80, protocol: HTTP}]}\n",
			"its spec.parentRef names a ListenerSet of group gateway.networking.k8s.io: a ListenerSet's parent is a Gateway", true},
		{"a misspelt GatewayClass", class + "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {gatewayClassName: portculis, listeners: [{name: http, port: 80, protocol: HTTP}]}\n",
			`Gateway default/gw (Gateway): its GatewayClass "portculis" is not in the input (there are portcullis)`, true},
		{"a missing GatewayClass", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {gatewayClassName: portcullis, listeners: [{name: http, port: 80, protocol: HTTP}]}\n",
			`its GatewayClass "portcullis" is not in the input (there is none)`, true},
		{"another controller's class", "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: other}\nspec: {controllerName: example.com/other}\n",
			`its controllerName "example.com/other" is not this controller's`, false},
		{"another group's kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
			"kind not read by portcullis", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := run("translate", "-f", path)
			if err != nil || !strings.Contains(errOut, tc.note) {
				t.Errorf("without --strict: error %v, stderr %q lacks %q", err, errOut, tc.note)
			}
			if _, _, err := run("translate", "--strict", "-f", path); (err != nil) != tc.fails {
				t.Errorf("--strict: error %v, want failure %v", err, tc.fails)
			}
		})
	}
}
