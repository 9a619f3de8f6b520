package translator

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Gateway listeners on ports of their own are served like the shared
// ones, under their own names, and their resources are the Gateways' and
// their hosts'.
func TestGatewayListeners(t *testing.T) {
	ref := func(kind, name string) ir.Origins {
		return ir.NewOrigins(objects.Ref{Kind: kind, Namespace: "default", Name: name})
	}
	gw, route := ref("Gateway", "gw"), ref("HTTPRoute", "r")
	routes := []*ir.Route{{Path: "/", Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}
	secure := func(fqdn string) *ir.SecureVirtualHost {
		return &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: fqdn, Routes: routes, Origins: route}, Secret: "default/tls"}
	}
	// The shared HTTPS listener serves a.example.com too.
	m := sharedModel(nil, []*ir.SecureVirtualHost{secure("a.example.com")})
	m.GlobalAuth = &ir.ExtAuth{Cluster: "extension/auth/global"}
	m.Listeners = append(m.Listeners,
		&ir.Listener{Name: "http-9080", Address: "10.0.0.1", Port: 9080, Origins: gw, KeepHostPort: true, Insecure: []*ir.VirtualHost{{FQDN: "*", Routes: routes, Origins: route}}},
		&ir.Listener{Name: "https-9443", Address: "10.0.0.2", Port: 9443, TLS: true, Origins: gw, KeepHostPort: true, Secure: []*ir.SecureVirtualHost{secure("a.example.com"), secure("*.example.com"), secure("*")}},
		// No host: no listener (Envoy refuses one without filter chains).
		&ir.Listener{Name: "https-9444", Address: "10.0.0.2", Port: 9444, TLS: true, Origins: gw},
	)
	res := Translate(m, Options{})

	var names []string
	for _, l := range res.Listeners {
		names = append(names, ResourceName(l))
	}
	if want := []string{"http-9080", "https-9443", HTTPListenerName, HTTPSListenerName}; !slices.Equal(names, want) {
		t.Fatalf("listeners %v, want %v", names, want)
	}

	plain := listenerNamed(t, res.Listeners, "http-9080")
	if a := plain.Address.GetSocketAddress(); a.GetAddress() != "10.0.0.1" || a.GetPortValue() != 9080 {
		t.Errorf("http-9080 binds %v, want the HTTP address, port 9080", a)
	}
	hcm := hcmOf(t, plain.FilterChains[0].Filters[0])
	if hcm.GetRds().GetRouteConfigName() != "http-9080" || !slices.Equal(hcmFilters(t, hcm), []string{ExtAuthzFilterName, RouterFilterName}) {
		t.Errorf("http-9080: routes %s, filters %v; want http-9080 and the global authorization", hcm.GetRds().GetRouteConfigName(), hcmFilters(t, hcm))
	}
	if d := routeConfigNamed(t, res.Routes, "http-9080").VirtualHosts[0].Domains; !slices.Equal(d, []string{"*"}) {
		t.Errorf("http-9080 domains %v, want *", d)
	}

	tls := listenerNamed(t, res.Listeners, "https-9443")
	if a := tls.Address.GetSocketAddress(); a.GetAddress() != "10.0.0.2" || a.GetPortValue() != 9443 {
		t.Errorf("https-9443 binds %v, want the HTTPS address, port 9443", a)
	}
	if len(tls.ListenerFilters) != 1 || tls.ListenerFilters[0].Name != tlsInspectorName {
		t.Errorf("https-9443 listener filters %v, want the TLS inspector", tls.ListenerFilters)
	}
	for i, want := range []struct {
		name string
		sni  []string
	}{{"https-9443/*", nil}, {"https-9443/*.example.com", []string{"*.example.com"}}, {"https-9443/a.example.com", []string{"a.example.com"}}} {
		c := tls.FilterChains[i]
		if c.Name != want.name || !slices.Equal(c.GetFilterChainMatch().GetServerNames(), want.sni) {
			t.Errorf("chain %d: %s matching %v, want %s matching %v", i, c.Name, c.GetFilterChainMatch(), want.name, want.sni)
		}
		if rc := hcmOf(t, c.Filters[0]).GetRds().GetRouteConfigName(); rc != want.name {
			t.Errorf("chain %s routes with %s", c.Name, rc)
		}
		routeConfigNamed(t, res.Routes, want.name)
	}
	// The shared listener's host of the same name keeps its own.
	routeConfigNamed(t, res.Routes, SecureRouteConfigName("a.example.com"))

	both := gw.Union(route)
	for _, tc := range []struct{ typeURL, name string }{
		{resourcev3.ListenerType, "http-9080"}, {resourcev3.RouteType, "http-9080"},
		{resourcev3.ListenerType, "https-9443"}, {resourcev3.RouteType, "https-9443/*.example.com"},
	} {
		if got := res.Index.Objects(tc.typeURL, []string{tc.name}, ""); !slices.Equal(got, both) {
			t.Errorf("index of %s: %v, want %v", tc.name, got, both)
		}
	}
	if res.Index.Served(resourcev3.ListenerType, []string{"https-9444"}) {
		t.Error("https-9444 indexed, but not served")
	}
}

// sharedModel is a model whose shared listeners, bound where they are by
// default, serve these hosts.
func sharedModel(insecure []*ir.VirtualHost, secure []*ir.SecureVirtualHost) *ir.Model {
	return &ir.Model{Listeners: []*ir.Listener{
		{Name: HTTPListenerName, Address: "0.0.0.0", Port: 8080, Insecure: insecure},
		{Name: HTTPSListenerName, Address: "0.0.0.0", Port: 8443, TLS: true, Secure: secure},
	}}
}
