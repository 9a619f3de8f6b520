package builder

import (
	"fmt"
	"slices"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// TestMisdirectedNamesBounded: two HTTPS listeners of one port with
// wildcard hostnames and many hosts each. A host's 421 names are "*" alone,
// which already answers every other host: listing the other listener's
// hosts on each host made the configuration grow with the square of the
// hosts (two listeners of 2,000 hosts: 300 MB).
func TestMisdirectedNamesBounded(t *testing.T) {
	const perListener = 300
	set := gwTLSSet(t, nil)
	gw := set.Gateways[0]
	tls := gw.Spec.Listeners[0].TLS
	gw.Spec.Listeners = nil
	for _, z := range []string{"a", "b"} {
		host := gwapiv1.Hostname("*." + z + ".example.com")
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwapiv1.Listener{Name: gwapiv1.SectionName(z), Port: 9443, Protocol: gwapiv1.HTTPSProtocolType, Hostname: &host, TLS: tls})
		for i := range perListener {
			section := gwapiv1.SectionName(z)
			set.HTTPRoutes = append(set.HTTPRoutes, &gwapiv1.HTTPRoute{
				ObjectMeta: gw.ObjectMeta, // namespace web; the name below
				Spec: gwapiv1.HTTPRouteSpec{
					CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "gw", SectionName: &section}}},
					Hostnames:       []gwapiv1.Hostname{gwapiv1.Hostname(fmt.Sprintf("h%d.%s.example.com", i, z))},
					Rules:           []gwapiv1.HTTPRouteRule{{}},
				},
			})
			set.HTTPRoutes[len(set.HTTPRoutes)-1].Name = fmt.Sprintf("r-%s-%d", z, i)
		}
	}
	l := Build(set, core.Options{HTTP: core.Bind{Port: 8080}}).Model.Listener("https-9443")
	if l == nil || len(l.Secure) != 2*perListener+2 {
		t.Fatalf("want the listener with the %d hosts and each listener's wildcard host", 2*perListener)
	}
	for _, h := range l.Secure {
		if !slices.Equal(h.Misdirected, []string{"*"}) {
			t.Fatalf("host %s: 421 for %d names (%.3v), want only *", h.FQDN, len(h.Misdirected), h.Misdirected)
		}
	}
}

// A name a wildcard of the list covers stays listed when a name served here
// matches it too: Envoy would otherwise serve it (the more specific domain
// wins).
func TestMisdirectedKeepsNamesAServedWildcardMatches(t *testing.T) {
	set := gwTLSSet(t, nil)
	gw := set.Gateways[0]
	tls := gw.Spec.Listeners[0].TLS
	wide, narrow := gwapiv1.Hostname("*.example.com"), gwapiv1.Hostname("a.example.com")
	gw.Spec.Listeners = []gwapiv1.Listener{
		{Name: "wide", Port: 9443, Protocol: gwapiv1.HTTPSProtocolType, Hostname: &wide, TLS: tls},
		{Name: "narrow", Port: 9443, Protocol: gwapiv1.HTTPSProtocolType, Hostname: &narrow, TLS: tls},
	}
	l := Build(set, core.Options{HTTP: core.Bind{Port: 8080}}).Model.Listener("https-9443")
	if l == nil {
		t.Fatal("no listener")
	}
	i := slices.IndexFunc(l.Secure, func(h *ir.SecureVirtualHost) bool { return h.FQDN == "*.example.com" })
	if i < 0 {
		t.Fatal("no host *.example.com")
	}
	if got := l.Secure[i].Misdirected; !slices.Equal(got, []string{"*", "a.example.com"}) {
		t.Fatalf("421 for %v, want * and a.example.com (its own wildcard matches it)", got)
	}
}
