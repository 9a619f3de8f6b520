package pipeline_test

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestGatewaysSharingACatchAll: in the shared mode, Gateways whose
// listeners claim the same hostname on one port cannot all be served;
// the younger ones' listeners say which Gateway keeps it and what to do
// (a hostname of their own, or gateway.servicePerGateway), and so does a
// Gateway left with no listener.
func TestGatewaysSharingACatchAll(t *testing.T) {
	gw := func(name, listeners string) string {
		return `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ` + name + `, namespace: default}
spec: {gatewayClassName: portcullis, listeners: [` + listeners + `]}
`
	}
	const catchAll = "{name: http, port: 80, protocol: HTTP}"
	for _, tc := range []struct {
		name     string
		gateways []string
		loser    objects.Ref
		listener string
		words    []string // in the listener's Conflicted and the Gateway's Accepted
	}{
		{"two Gateways", []string{gw("a", catchAll), gw("b", catchAll)}, objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: "b"}, "http",
			[]string{`hostname "*" on port 80`, "Gateway default/a", "gateway.servicePerGateway", "a hostname of its own"}},
		{"three Gateways: the oldest keeps it", []string{gw("c", catchAll), gw("a", catchAll), gw("b", catchAll)}, objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: "c"}, "http",
			[]string{"Gateway default/a", "gateway.servicePerGateway"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runYAML(t, append([]string{gatewayClass, echoService}, tc.gateways...)...)
			ls := gatewayConditions(t, res, tc.loser, tc.listener)
			wantCondition(t, ls, "Conflicted", "True", "HostnameConflict", tc.words...)
			wantCondition(t, gatewayConditions(t, res, tc.loser, ""), "Accepted", "False", "ListenersNotValid", tc.words...)
		})
	}
}

// TestIndistinctListenersOfOneGateway: listeners of one Gateway that
// differ only in name (same port, protocol and hostname) are all
// Conflicted and none is served (the API's Listener reference: no winner);
// the Gateway's distinct listeners are, and another Gateway may then serve
// the hostname. The CRD refuses such a Gateway (CEL), a cluster's older
// CRDs may not: the builder's own rule.
func TestIndistinctListenersOfOneGateway(t *testing.T) {
	gw := func(name, listeners string) string {
		return `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ` + name + `, namespace: default}
spec: {gatewayClassName: portcullis, listeners: [` + listeners + `]}
`
	}
	const one, two = "{name: one, port: 80, protocol: HTTP}", "{name: two, port: 80, protocol: HTTP}"
	const hostOne, hostTwo = "{name: one, port: 80, protocol: HTTP, hostname: a.example.com}", "{name: two, port: 80, protocol: HTTP, hostname: a.example.com}"
	const other = "{name: other, port: 80, protocol: HTTP, hostname: b.example.com}"
	type want struct{ gateway, listener, programmed string }
	for _, tc := range []struct {
		name     string
		gateways []string
		want     []want
		accepted map[string]string // Gateway -> Accepted status
	}{
		{"two catch-alls", []string{gw("a", one+", "+two)},
			[]want{{"a", "one", "False"}, {"a", "two", "False"}}, map[string]string{"a": "False"}},
		{"two of one hostname, one distinct", []string{gw("a", hostOne+", "+hostTwo+", "+other)},
			[]want{{"a", "one", "False"}, {"a", "two", "False"}, {"a", "other", "True"}}, map[string]string{"a": "True"}},
		{"an older Gateway's indistinct listeners keep nothing", []string{gw("a", one+", "+two), gw("b", one)},
			[]want{{"a", "one", "False"}, {"a", "two", "False"}, {"b", "one", "True"}}, map[string]string{"a": "False"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWithoutCRD(t, append([]string{gatewayClass, echoService}, tc.gateways...)...)
			ref := func(name string) objects.Ref {
				return objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: name}
			}
			for _, w := range tc.want {
				cs := gatewayConditions(t, res, ref(w.gateway), w.listener)
				if w.programmed == "True" {
					wantCondition(t, cs, "Programmed", "True", "Programmed")
					continue
				}
				wantCondition(t, cs, "Conflicted", "True", "HostnameConflict", `listeners "one", "two" of the Gateway`, "none of them is served")
			}
			for name, status := range tc.accepted {
				wantCondition(t, gatewayConditions(t, res, ref(name), ""), "Accepted", status, "ListenersNotValid", `listener "one"`, `listener "two"`)
			}
		})
	}
}
