package e2e

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestGatewayAPIListenerSets: ListenerSets (GEP-1713) through the
// kubernetes provider into the real Envoy. The Gateway allows the
// ListenerSets of the Namespaces labelled team=yes: the team's
// ListenerSet adds an HTTP listener on port 80 and an HTTPS one on 443
// (its own certificate), and its route, attached to the ListenerSet, is
// served on both; another Namespace's ListenerSet is not allowed and its
// host is refused (404). The Gateway's own route does not reach the
// ListenerSet's host. When the Gateway stops allowing ListenerSets, the
// team's host is refused too.
func TestGatewayAPIListenerSets(t *testing.T) {
	const teamNS, otherNS = "gateway-ls-team", "gateway-ls-other"
	g := startGatewayStack(t)
	team, own := harness.StartEcho(t, "team"), harness.StartEcho(t, "own")

	gw := gateway(gwNS, "shared", "portcullis", httpListener("http", 80, "www.example.com"))
	allowTeams := &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{
		From:     ptr.To(gwapiv1.NamespacesFromSelector),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "yes"}},
	}}
	gw.Spec.AllowedListeners = allowTeams
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gwNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamNS, Labels: map[string]string{"team": "yes"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}},
	}
	objs = append(objs, echoService(teamNS, team)...)
	objs = append(objs, echoService(otherNS, team)...)
	objs = append(objs, echoService(gwNS, own)...)
	objs = append(objs,
		g.ca.Issue(t, "secure.apps.example.com").Secret(teamNS, "apps-tls"),
		gatewayClass("portcullis", gatewayController),
		gw,
		listenerSet(teamNS, "apps", httpListener("http", 80, "apps.example.com"), httpsListener("https", 443, "secure.apps.example.com", "apps-tls")),
		listenerSet(otherNS, "denied", httpListener("http", 80, "denied.example.com")),
		httpRoute(teamNS, "apps", listenerSetRef(teamNS, "apps", ""), nil, rule("team")),
		httpRoute(otherNS, "denied", listenerSetRef(otherNS, "denied", ""), nil, rule("team")),
		httpRoute(gwNS, "own", parentRef("shared", ""), nil, rule("own")),
	)
	g.apply(t, objs...)

	t.Run("statuses", func(t *testing.T) {
		g.eventuallyListenerSet(t, teamNS, "apps", accepted, programmed)
		g.eventuallyListenerSet(t, otherNS, "denied",
			cond{"Accepted", metav1.ConditionFalse, "NotAllowed"}, cond{"Programmed", metav1.ConditionFalse, "NotAllowed"})
		shared := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "shared"}}
		g.eventuallyObject(t, shared, func() error {
			if n := ptr.Deref(shared.Status.AttachedListenerSets, -1); n != 1 {
				return fmt.Errorf("attachedListenerSets %d, want 1", n)
			}
			if len(shared.Status.Listeners) != 1 {
				return fmt.Errorf("%d listeners in the Gateway's status, want its own only", len(shared.Status.Listeners))
			}
			return nil
		})
		r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, Name: "apps"}}
		g.eventuallyObject(t, r, func() error {
			if len(r.Status.Parents) != 1 || ptr.Deref(r.Status.Parents[0].ParentRef.Kind, "") != "ListenerSet" {
				return fmt.Errorf("parents %+v, want the ListenerSet's only", r.Status.Parents)
			}
			return checkConds(r.Status.Parents[0].Conditions, r.Generation, accepted, resolvedRefs)
		})
	})

	http1 := harness.HTTPClient(g.httpAddr)
	t.Run("served through the ListenerSet's listeners", func(t *testing.T) {
		eventuallyServed(t, http1, "team", "GET", "http://apps.example.com/")
		eventuallyServed(t, harness.HTTPSClient(g.ca.CertPEM, g.httpsAddr), "team", "GET", "https://secure.apps.example.com/")
		eventuallyServed(t, http1, "own", "GET", "http://www.example.com/")
	})

	t.Run("refused: a ListenerSet not allowed, a host of the Gateway's own route", func(t *testing.T) {
		eventuallyStatus(t, http1, http.StatusNotFound, "GET", "http://denied.example.com/")
		// The Gateway's route has no hostnames: it attaches to the
		// Gateway's own listener (www.example.com), never to the
		// ListenerSet's.
		a, err := do(http1, "GET", "http://apps.example.com/")
		if err != nil || a.served("team") != nil {
			t.Errorf("apps.example.com: %v %v, want the team's route only", a, err)
		}
	})

	t.Run("the Gateway stops allowing ListenerSets", func(t *testing.T) {
		gw.Spec.AllowedListeners = nil
		g.apply(t, gw)
		eventuallyStatus(t, http1, http.StatusNotFound, "GET", "http://apps.example.com/")
		g.eventuallyListenerSet(t, teamNS, "apps", cond{"Accepted", metav1.ConditionFalse, "NotAllowed"})
		eventuallyServed(t, http1, "own", "GET", "http://www.example.com/")
	})
}

// listenerSet is a ListenerSet of namespace naming the Gateway shared of
// gwNS, with the listeners given.
func listenerSet(namespace, name string, listeners ...gwapiv1.Listener) *gwapiv1.ListenerSet {
	ls := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: gwapiv1.ListenerSetSpec{
		ParentRef: gwapiv1.ParentGatewayReference{Namespace: ptr.To(gwapiv1.Namespace(gwNS)), Name: "shared"},
	}}
	for _, l := range listeners {
		ls.Spec.Listeners = append(ls.Spec.Listeners, gwapiv1.ListenerEntry(l))
	}
	return ls
}

// listenerSetRef is a parentRef to a ListenerSet, and one of its
// listeners unless section is "".
func listenerSetRef(namespace, name, section string) gwapiv1.ParentReference {
	p := gwapiv1.ParentReference{Group: ptr.To(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptr.To(gwapiv1.Kind("ListenerSet")),
		Namespace: ptr.To(gwapiv1.Namespace(namespace)), Name: gwapiv1.ObjectName(name)}
	if section != "" {
		p.SectionName = ptr.To(gwapiv1.SectionName(section))
	}
	return p
}

// eventuallyListenerSet waits until the ListenerSet's conditions are the
// wanted ones, at its generation.
func (g *gatewayStack) eventuallyListenerSet(t *testing.T, namespace, name string, want ...cond) {
	t.Helper()
	ls := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	g.eventuallyObject(t, ls, func() error { return checkConds(ls.Status.Conditions, ls.Generation, want...) })
}
