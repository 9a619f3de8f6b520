package pipeline_test

import (
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestGatewaysSharingACatchAll: in the shared mode, Gateways whose
// listeners claim the same hostname on one port cannot all be served;
// the younger ones' listeners say which Gateway keeps it and what to do
// (a hostname of their own, or gateway.servicePerGateway), and so does a
// Gateway left with no listener. Within one Gateway the message does not
// point at servicePerGateway, which would not help.
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
		absent   string   // not in them
	}{
		{"two Gateways", []string{gw("a", catchAll), gw("b", catchAll)}, objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: "b"}, "http",
			[]string{`hostname "*" on port 80`, "Gateway default/a", "gateway.servicePerGateway", "a hostname of its own"}, ""},
		{"three Gateways: the oldest keeps it", []string{gw("c", catchAll), gw("a", catchAll), gw("b", catchAll)}, objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: "c"}, "http",
			[]string{"Gateway default/a", "gateway.servicePerGateway"}, ""},
		{"one Gateway's two listeners", []string{gw("a", catchAll+", {name: again, port: 80, protocol: HTTP}")}, objects.Ref{Kind: objects.KindGateway, Namespace: "default", Name: "a"}, "again",
			[]string{`listener "http" of Gateway default/a`}, "servicePerGateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runYAML(t, append([]string{gatewayClass, echoService}, tc.gateways...)...)
			ls := gatewayConditions(t, res, tc.loser, tc.listener)
			wantCondition(t, ls, "Conflicted", "True", "HostnameConflict", tc.words...)
			gw := gatewayConditions(t, res, tc.loser, "")
			if tc.absent == "" {
				wantCondition(t, gw, "Accepted", "False", "ListenersNotValid", tc.words...)
				return
			}
			for _, c := range append(ls, gw...) {
				if c.Type == "Conflicted" && strings.Contains(c.Message, tc.absent) {
					t.Errorf("%s says %q: %s", c.Type, tc.absent, c.Message)
				}
			}
		})
	}
}
