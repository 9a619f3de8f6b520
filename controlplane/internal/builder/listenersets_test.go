package builder

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// listenerSetBase: our class, a Namespace team labelled env=prod and one
// other without labels.
const listenerSetBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: v1
kind: Namespace
metadata: {name: team, labels: {env: prod}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
`

// buildListenerSets builds the base with docs, with options opts.
func buildListenerSets(t *testing.T, docs string, opts core.Options) *Result {
	t.Helper()
	var in objects.Set
	if _, err := in.Decode(strings.NewReader(listenerSetBase+"---\n"+docs), "in.yaml"); err != nil {
		t.Fatal(err)
	}
	return Build(&in, opts)
}

// gatewayAPIStatusOf is the builder's status of one object.
func gatewayAPIStatusOf(t *testing.T, res *Result, kind, namespace, name string) *status.GatewayAPI {
	t.Helper()
	for _, o := range res.Status {
		if o.Ref == (objects.Ref{Kind: kind, Namespace: namespace, Name: name}) {
			return o.GatewayAPI
		}
	}
	return nil
}

// TestListenerSetAllowedListeners: a Gateway's spec.allowedListeners
// decides which ListenerSets attach (None by default), each
// NotAllowed one serving nothing; the Gateway counts the others.
func TestListenerSetAllowedListeners(t *testing.T) {
	const set = `
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: ls, namespace: %s}
spec:
  parentRef: {name: gw, namespace: infra}
  listeners: [{name: http, port: 80, protocol: HTTP, hostname: %s.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: %s}
spec:
  parentRefs: [{kind: ListenerSet, name: ls}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`
	for _, tc := range []struct {
		name, allowed, namespace string
		// wantReason is the ListenerSet's Accepted reason ("" for no
		// status: not ours).
		wantReason string
		wantCount  *int32
	}{
		{"unset: none", "", "infra", string(gwapiv1.ListenerSetReasonNotAllowed), ptr(0)},
		{"None", "allowedListeners: {namespaces: {from: None}}", "infra", string(gwapiv1.ListenerSetReasonNotAllowed), ptr(0)},
		{"Same, the Gateway's namespace", "allowedListeners: {namespaces: {from: Same}}", "infra", string(gwapiv1.ListenerSetReasonAccepted), ptr(1)},
		{"Same, another namespace", "allowedListeners: {namespaces: {from: Same}}", "team", string(gwapiv1.ListenerSetReasonNotAllowed), ptr(0)},
		{"All", "allowedListeners: {namespaces: {from: All}}", "other", string(gwapiv1.ListenerSetReasonAccepted), ptr(1)},
		{"Selector, labels match", "allowedListeners: {namespaces: {from: Selector, selector: {matchLabels: {env: prod}}}}", "team", string(gwapiv1.ListenerSetReasonAccepted), ptr(1)},
		{"Selector, labels do not match", "allowedListeners: {namespaces: {from: Selector, selector: {matchLabels: {env: prod}}}}", "other", string(gwapiv1.ListenerSetReasonNotAllowed), ptr(0)},
		{"Selector, a Namespace not given", "allowedListeners: {namespaces: {from: Selector, selector: {matchLabels: {env: prod}}}}", "unknown", string(gwapiv1.ListenerSetReasonNotAllowed), ptr(0)},
		{"Selector without selector: the Gateway is not accepted", "allowedListeners: {namespaces: {from: Selector}}", "infra", string(gwapiv1.ListenerSetReasonParentNotAccepted), ptr(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: portcullis
  %s
  listeners: [{name: http, port: 80, protocol: HTTP, hostname: gw.example.com}]
---`, tc.allowed) + fmt.Sprintf(set, tc.namespace, tc.namespace, tc.namespace)
			res := buildListenerSets(t, docs, core.Options{HTTP: core.Bind{Port: 8080}})
			ls := gatewayAPIStatusOf(t, res, objects.KindListenerSet, tc.namespace, "ls")
			if ls == nil {
				t.Fatal("no status for the ListenerSet")
			}
			acc := meta.FindStatusCondition(ls.Conditions, string(gwapiv1.ListenerSetConditionAccepted))
			if acc == nil || acc.Reason != tc.wantReason {
				t.Fatalf("Accepted %+v, want reason %s", acc, tc.wantReason)
			}
			served := slices.ContainsFunc(res.Model.Listeners, func(l *ir.Listener) bool {
				return slices.ContainsFunc(l.Insecure, func(v *ir.VirtualHost) bool { return v.FQDN == tc.namespace+".example.com" })
			})
			if want := tc.wantReason == string(gwapiv1.ListenerSetReasonAccepted); served != want {
				t.Errorf("%s.example.com served: %v, want %v", tc.namespace, served, want)
			}
			gw := gatewayAPIStatusOf(t, res, objects.KindGateway, "infra", "gw")
			if got := gw.AttachedListenerSets; (got == nil) != (tc.wantCount == nil) || got != nil && *got != *tc.wantCount {
				t.Errorf("attachedListenerSets %v, want %v", deref(got), deref(tc.wantCount))
			}
		})
	}
}

// TestListenerSetPrecedence: of listeners claiming one hostname, the
// Gateway's own keeps it, then the oldest ListenerSet's, then by
// namespace/name; a ListenerSet read from a file (no creationTimestamp)
// comes after those with one. The others are Conflicted and not Accepted
// (HostnameConflict).
func TestListenerSetPrecedence(t *testing.T) {
	type ls struct{ namespace, name, created string }
	for _, tc := range []struct {
		name       string
		gatewayToo bool
		sets       []ls
		want       string // the winner: "gateway" or namespace/name
	}{
		{"the Gateway's own first", true, []ls{{"a", "x", "2020-01-01T00:00:00Z"}}, "gateway"},
		{"the oldest ListenerSet", false, []ls{{"a", "a", "2026-01-02T00:00:00Z"}, {"a", "z", "2026-01-01T00:00:00Z"}}, "a/z"},
		{"the same age: by namespace", false, []ls{{"b", "a", "2026-01-01T00:00:00Z"}, {"a", "z", "2026-01-01T00:00:00Z"}}, "a/z"},
		{"the same age and namespace: by name", false, []ls{{"a", "lb", "2026-01-01T00:00:00Z"}, {"a", "la", "2026-01-01T00:00:00Z"}}, "a/la"},
		{"without an age: after those with one", false, []ls{{"a", "a", ""}, {"a", "b", "2026-01-01T00:00:00Z"}}, "a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := ""
			if tc.gatewayToo {
				own = "\n  - {name: same, port: 80, protocol: HTTP, hostname: same.example.com}"
			}
			docs := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra, creationTimestamp: "2019-01-01T00:00:00Z"}
spec:
  gatewayClassName: portcullis
  allowedListeners: {namespaces: {from: All}}
  listeners:
  - {name: http, port: 80, protocol: HTTP, hostname: gw.example.com}` + own + "\n"
			for _, s := range tc.sets {
				created := ""
				if s.created != "" {
					created = fmt.Sprintf(", creationTimestamp: %q", s.created)
				}
				docs += fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: %s, namespace: %s%s}
spec:
  parentRef: {name: gw, namespace: infra}
  listeners:
  - {name: same, port: 80, protocol: HTTP, hostname: same.example.com}
  - {name: own, port: 80, protocol: HTTP, hostname: %s-%s.example.com}
`, s.name, s.namespace, created, s.namespace, s.name)
			}
			res := buildListenerSets(t, docs, core.Options{HTTP: core.Bind{Port: 8080}})
			for _, s := range tc.sets {
				st := gatewayAPIStatusOf(t, res, objects.KindListenerSet, s.namespace, s.name)
				same := st.Listeners[0]
				acc := meta.FindStatusCondition(same.Conditions, string(gwapiv1.ListenerConditionAccepted))
				conflicted := meta.FindStatusCondition(same.Conditions, string(gwapiv1.ListenerConditionConflicted))
				wins := tc.want == s.namespace+"/"+s.name
				if got := acc.Status == "True"; got != wins {
					t.Errorf("%s/%s's listener same: Accepted %s (%s), want winning %v", s.namespace, s.name, acc.Status, acc.Message, wins)
				}
				if !wins && (conflicted.Status != "True" || conflicted.Reason != string(gwapiv1.ListenerReasonHostnameConflict) || acc.Reason != string(gwapiv1.ListenerReasonHostnameConflict)) {
					t.Errorf("%s/%s's listener same: Conflicted %s %s, Accepted %s, want True HostnameConflict both", s.namespace, s.name, conflicted.Status, conflicted.Reason, acc.Reason)
				}
				// Its other listener is served whatever happens to this one.
				if acc := meta.FindStatusCondition(st.Conditions, string(gwapiv1.ListenerSetConditionAccepted)); acc.Status != "True" {
					t.Errorf("%s/%s: Accepted %s (%s), want True (a listener of its own is served)", s.namespace, s.name, acc.Status, acc.Message)
				}
			}
			if tc.gatewayToo {
				gw := gatewayAPIStatusOf(t, res, objects.KindGateway, "infra", "gw")
				if c := meta.FindStatusCondition(gw.Listeners[1].Conditions, string(gwapiv1.ListenerConditionConflicted)); c.Status != "False" {
					t.Errorf("the Gateway's listener same: Conflicted %s (%s), want False", c.Status, c.Message)
				}
			}
		})
	}
}

// TestListenerSetPortsOnTheGatewayService: with gateway.servicePerGateway
// a ListenerSet's listener port is a port of its parent's Service, to one
// of its Envoy ports; a ListenerSet not allowed adds none.
func TestListenerSetPortsOnTheGatewayService(t *testing.T) {
	docs := `apiVersion: v1
kind: Service
metadata: {name: envoy, namespace: portcullis}
spec:
  selector: {app: envoy}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: portcullis
  allowedListeners: {namespaces: {from: Same}}
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: allowed, namespace: infra}
spec:
  parentRef: {name: gw}
  listeners: [{name: alt, port: 8081, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: denied, namespace: team}
spec:
  parentRef: {name: gw, namespace: infra}
  listeners: [{name: alt, port: 9090, protocol: HTTP}]
`
	res := buildListenerSets(t, docs, core.Options{HTTP: core.Bind{Port: 8080}, EnvoyService: "portcullis/envoy", GatewayServicePerGateway: true})
	if len(res.GatewayServices) != 1 {
		t.Fatalf("%d Services, want 1", len(res.GatewayServices))
	}
	var ports []int32
	for _, p := range res.GatewayServices[0].Spec.Ports {
		ports = append(ports, p.Port)
	}
	if !slices.Equal(ports, []int32{80, 8081}) {
		t.Errorf("the Gateway's Service has ports %v, want [80 8081] (its own, its ListenerSet's; not the denied one's)", ports)
	}
}

func ptr(n int32) *int32 { return &n }

func deref(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
