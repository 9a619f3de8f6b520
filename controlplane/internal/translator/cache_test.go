package translator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// TestCache translates a sequence of models with one cache, each built
// afresh (new pointers, as the builder does), and checks that the output is
// exactly that of an uncached translation and which hosts were reused.
func TestCache(t *testing.T) {
	// host describes one TLS virtual host: its FQDN, paths and whether it
	// has authorization.
	type host struct {
		fqdn  string
		paths []string
		auth  bool
	}
	model := func(hosts []host) *ir.Model {
		m := sharedModel(nil, nil)
		// Enough unchanging hosts to translate on several goroutines.
		for i := range 100 {
			hosts = append(hosts, host{fqdn: fmt.Sprintf("filler%03d.example.com", i), paths: []string{"/"}})
		}
		for _, h := range hosts {
			vh := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: h.fqdn}, Secret: "default/tls"}
			for _, p := range h.paths {
				vh.Routes = append(vh.Routes, &ir.Route{Path: p, Clusters: []ir.WeightedCluster{{Cluster: "default/svc/80", Weight: 1}}})
			}
			if h.auth {
				vh.Auth = &ir.ExtAuth{Cluster: "auth/ext/9000"}
			}
			m.Listeners[1].Secure = append(m.Listeners[1].Secure, vh)
		}
		return m
	}
	c := NewCache()
	for _, step := range []struct {
		name         string
		hosts        []host
		hits, misses int
	}{
		{name: "empty cache: all translated", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}}, {fqdn: "b.example.com", paths: []string{"/"}}}, hits: 0, misses: 102},
		{name: "same model again: all reused", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}}, {fqdn: "b.example.com", paths: []string{"/"}}}, hits: 102, misses: 0},
		{name: "a new route: that host translated", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}}, {fqdn: "b.example.com", paths: []string{"/", "/new"}}}, hits: 101, misses: 1},
		{name: "authorization added: filter chain and routes translated", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}, auth: true}, {fqdn: "b.example.com", paths: []string{"/", "/new"}}}, hits: 101, misses: 1},
		{name: "a host removed, one added", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}, auth: true}, {fqdn: "c.example.com", paths: []string{"/"}}}, hits: 101, misses: 1},
		{name: "a removed host comes back: translated again", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}, auth: true}, {fqdn: "b.example.com", paths: []string{"/"}}}, hits: 101, misses: 1},
		{name: "back to the first model", hosts: []host{{fqdn: "a.example.com", paths: []string{"/"}}, {fqdn: "b.example.com", paths: []string{"/"}}}, hits: 101, misses: 1},
	} {
		t.Run(step.name, func(t *testing.T) {
			checkUncached(t, TranslateCached(model(step.hosts), Options{}, c), Translate(model(step.hosts), Options{}))
			if c.Hits != step.hits || c.Misses != step.misses {
				t.Errorf("%d hosts reused and %d translated, want %d and %d", c.Hits, c.Misses, step.hits, step.misses)
			}
		})
	}
}

// checkUncached fails unless a cached translation is the uncached one.
func checkUncached(t *testing.T, got, want *Resources) {
	t.Helper()
	for _, l := range []struct {
		kind      string
		got, want []proto.Message
	}{
		{"listener", got.Listeners, want.Listeners}, {"route", got.Routes, want.Routes},
		{"cluster", got.Clusters, want.Clusters}, {"secret", got.Secrets, want.Secrets},
	} {
		if len(l.got) != len(l.want) {
			t.Fatalf("%d %ss, want %d", len(l.got), l.kind, len(l.want))
		}
		for i := range l.got {
			if !proto.Equal(l.got[i], l.want[i]) {
				t.Errorf("%s %s differs from the uncached translation:\ngot  %v\nwant %v", l.kind, ResourceName(l.want[i]), l.got[i], l.want[i])
			}
		}
	}
}

// Route-level filters change the shared HCMs' filter lists, and Gateway
// listeners are translated without the cache: the output is still that
// of an uncached translation.
func TestCacheWithRouteFiltersAndGatewayListeners(t *testing.T) {
	vhost := func(fqdn string, auth *ir.ExtAuth) *ir.VirtualHost {
		return &ir.VirtualHost{FQDN: fqdn, Routes: []*ir.Route{{Path: "/", Auth: auth, Clusters: []ir.WeightedCluster{{Cluster: "default/svc/80", Weight: 1}}}}}
	}
	var hosts []*ir.VirtualHost
	for i := range 100 {
		hosts = append(hosts, vhost(fmt.Sprintf("filler%03d.example.com", i), nil))
	}
	auth := func(timeout time.Duration) *ir.ExtAuth {
		return &ir.ExtAuth{Cluster: "auth/ext/9000", Timeout: timeout}
	}
	c := NewCache()
	for _, step := range []struct {
		name      string
		a         *ir.VirtualHost
		gatewayVH *ir.VirtualHost
	}{
		{"no route filters", vhost("a.example.com", nil), vhost("*", nil)},
		{"a route names an authorization", vhost("a.example.com", auth(time.Second)), vhost("*", nil)},
		{"the same again", vhost("a.example.com", auth(time.Second)), vhost("*", nil)},
		{"its settings change", vhost("a.example.com", auth(2*time.Second)), vhost("*", nil)},
		{"a Gateway listener's route names one", vhost("a.example.com", auth(2*time.Second)), vhost("*", auth(time.Second))},
		{"none again", vhost("a.example.com", nil), vhost("*", nil)},
	} {
		t.Run(step.name, func(t *testing.T) {
			model := sharedModel(append([]*ir.VirtualHost{step.a}, hosts...), []*ir.SecureVirtualHost{{VirtualHost: *step.a, Secret: "default/tls"}})
			model.Listeners = append(model.Listeners, &ir.Listener{Name: "http-9080", Port: 9080, KeepHostPort: true, Insecure: []*ir.VirtualHost{step.gatewayVH}})
			checkUncached(t, TranslateCached(model, Options{}, c), Translate(model, Options{}))
		})
	}
}

func TestCacheReusesMessages(t *testing.T) {
	m := func() *ir.Model {
		return sharedModel(nil, []*ir.SecureVirtualHost{{VirtualHost: ir.VirtualHost{FQDN: "a.example.com", Routes: []*ir.Route{{Path: "/"}}}, Secret: "default/tls"}})
	}
	c := NewCache()
	first, second := TranslateCached(m(), Options{}, c), TranslateCached(m(), Options{}, c)
	// The route configuration is the same message: the xDS server does not
	// hash it again.
	name := SecureRouteConfigName("a.example.com")
	if routeConfigNamed(t, first.Routes, name) != routeConfigNamed(t, second.Routes, name) {
		t.Errorf("route configuration %s not reused", name)
	}
}

// The routes of the shared route configurations' virtual hosts (the HTTP
// listener's here) are reused only for the same IR pointer and the same
// filters, and the output is always that of an uncached translation.
func TestCacheSharedRouteConfigVirtualHosts(t *testing.T) {
	vhost := func(fqdn string, paths ...string) *ir.VirtualHost {
		vh := &ir.VirtualHost{FQDN: fqdn}
		for _, p := range paths {
			vh.Routes = append(vh.Routes, &ir.Route{Path: p, Clusters: []ir.WeightedCluster{{Cluster: "default/svc/80", Weight: 1}}})
		}
		return vh
	}
	// Enough virtual hosts to translate on several goroutines; a and b
	// have identical routes, so they are merged into one virtual host.
	hosts := []*ir.VirtualHost{vhost("a.example.com", "/"), vhost("b.example.com", "/")}
	for i := range 100 {
		hosts = append(hosts, vhost(fmt.Sprintf("filler%03d.example.com", i), "/", fmt.Sprintf("/%d", i)))
	}
	c := NewCache()
	var previous *routev3.RouteConfiguration
	for _, step := range []struct {
		name   string
		change func(m *ir.Model)
		reused bool // a's routes are the previous translation's
	}{
		{name: "empty cache", change: func(*ir.Model) {}, reused: false},
		{name: "same virtual hosts", change: func(*ir.Model) {}, reused: true},
		{name: "global authorization added: routes get per-route settings", change: func(m *ir.Model) { m.GlobalAuth = &ir.ExtAuth{Cluster: "auth/ext/9000"} }, reused: false},
		{name: "still with authorization", change: func(m *ir.Model) { m.GlobalAuth = &ir.ExtAuth{Cluster: "auth/ext/9000"} }, reused: true},
		{name: "a rebuilt with a new route: no longer merged with b", change: func(m *ir.Model) {
			m.GlobalAuth = &ir.ExtAuth{Cluster: "auth/ext/9000"}
			hosts[0] = vhost("a.example.com", "/", "/new")
			m.Listeners[0].Insecure[0] = hosts[0]
		}, reused: false},
		{name: "a built anew, equal (as the Gateway API stage builds its hosts)", change: func(m *ir.Model) {
			m.GlobalAuth = &ir.ExtAuth{Cluster: "auth/ext/9000"}
			hosts[0] = vhost("a.example.com", "/", "/new")
			m.Listeners[0].Insecure[0] = hosts[0]
		}, reused: true},
		{name: "a built anew, different", change: func(m *ir.Model) {
			m.GlobalAuth = &ir.ExtAuth{Cluster: "auth/ext/9000"}
			hosts[0] = vhost("a.example.com", "/", "/newer")
			m.Listeners[0].Insecure[0] = hosts[0]
		}, reused: false},
	} {
		t.Run(step.name, func(t *testing.T) {
			model := func() *ir.Model {
				m := sharedModel(append([]*ir.VirtualHost(nil), hosts...), nil)
				step.change(m)
				return m
			}
			got := routeConfigNamed(t, TranslateCached(model(), Options{}, c).Routes, HTTPRouteConfigName)
			want := routeConfigNamed(t, Translate(model(), Options{}).Routes, HTTPRouteConfigName)
			if !proto.Equal(got, want) {
				t.Fatalf("differs from the uncached translation:\ngot  %v\nwant %v", got, want)
			}
			if previous != nil {
				if reused := got.VirtualHosts[0].Routes[0] == previous.VirtualHosts[0].Routes[0]; reused != step.reused {
					t.Errorf("a's routes reused: %v, want %v", reused, step.reused)
				}
			}
			previous = got
		})
	}
}

func routeConfigNamed(t *testing.T, ms []proto.Message, name string) *routev3.RouteConfiguration {
	t.Helper()
	for _, m := range ms {
		if ResourceName(m) == name {
			return m.(*routev3.RouteConfiguration)
		}
	}
	t.Fatalf("no route configuration %s", name)
	return nil
}

// The clusters and endpoints of unchanged clusters are the previous
// translation's messages (the xDS server does not hash them again), also
// when their Origins changed; a changed cluster is translated again, a
// removed one forgotten; the output is always that of an uncached
// translation.
func TestCacheReusesClusters(t *testing.T) {
	clusters := func(endpoint, user string, extra bool) []*ir.Cluster {
		cs := []*ir.Cluster{
			{Name: "default/a/80", Endpoints: []ir.Endpoint{{Address: endpoint, Port: 80}}},
			{Name: "default/b/80", Endpoints: []ir.Endpoint{{Address: "10.0.0.2", Port: 80}}, Origins: ir.Origins{{Kind: "HTTPProxy", Namespace: "default", Name: user}}},
			{Name: "default/dns/80", DNSName: "example.com", DNSPort: 80},
		}
		if extra {
			cs = append(cs, &ir.Cluster{Name: "default/extra/80", Endpoints: []ir.Endpoint{{Address: "10.0.0.3", Port: 80}}})
		}
		return cs
	}
	c := NewCache()
	var previous *Resources
	for _, step := range []struct {
		name     string
		clusters []*ir.Cluster
		reused   []bool // by cluster, in order
	}{
		{name: "empty cache", clusters: clusters("10.0.0.1", "b", true), reused: []bool{false, false, false, false}},
		{name: "same clusters, built again", clusters: clusters("10.0.0.1", "b", true), reused: []bool{true, true, true, true}},
		{name: "other origins: the same messages", clusters: clusters("10.0.0.1", "c", true), reused: []bool{true, true, true, true}},
		{name: "an endpoint changed, a cluster removed", clusters: clusters("10.0.0.9", "c", false), reused: []bool{false, true, true}},
		{name: "the removed cluster is back: translated again", clusters: clusters("10.0.0.9", "c", true), reused: []bool{true, true, true, false}},
	} {
		t.Run(step.name, func(t *testing.T) {
			m := sharedModel(nil, nil)
			m.Clusters = step.clusters
			got := TranslateCached(m, Options{}, c)
			checkUncached(t, got, Translate(m, Options{}))
			if len(got.Clusters) != len(step.reused) {
				t.Fatalf("%d clusters, want %d", len(got.Clusters), len(step.reused))
			}
			for i, reused := range step.reused {
				name := ResourceName(got.Clusters[i])
				was := -1
				if previous != nil {
					was = slices.IndexFunc(previous.Clusters, func(m proto.Message) bool { return ResourceName(m) == name })
				}
				if same := was >= 0 && previous.Clusters[was] == got.Clusters[i]; same != reused {
					t.Errorf("cluster %s reused: %v, want %v", name, same, reused)
				}
			}
			// The endpoints follow their cluster.
			for _, e := range got.Endpoints {
				name := ResourceName(e)
				i := slices.IndexFunc(step.clusters, func(c *ir.Cluster) bool { return c.Name == name })
				was := -1
				if previous != nil {
					was = slices.IndexFunc(previous.Endpoints, func(m proto.Message) bool { return ResourceName(m) == name })
				}
				if same := was >= 0 && previous.Endpoints[was] == e; same != step.reused[i] {
					t.Errorf("endpoints of %s reused: %v, want %v", name, same, step.reused[i])
				}
			}
			previous = got
		})
	}
}

// The shared TLS listener is the previous translation's message while its
// filter chains are the same (a host whose routes changed keeps its
// chain), and a new one when a chain or the listener itself changed; the
// output is always that of an uncached translation.
func TestCacheReusesTLSListener(t *testing.T) {
	model := func(paths []string, auth bool, port uint32) *ir.Model {
		a := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: "a.example.com"}, Secret: "default/tls"}
		for _, p := range paths {
			a.Routes = append(a.Routes, &ir.Route{Path: p})
		}
		if auth {
			a.Auth = &ir.ExtAuth{Cluster: "auth/ext/9000"}
		}
		b := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: "b.example.com", Routes: []*ir.Route{{Path: "/"}}}, Secret: "default/tls"}
		m := sharedModel(nil, []*ir.SecureVirtualHost{a, b})
		m.Listeners[1].Port = port
		return m
	}
	c := NewCache()
	var previous proto.Message
	for _, step := range []struct {
		name   string
		model  *ir.Model
		reused bool
	}{
		{"empty cache", model([]string{"/"}, false, 8443), false},
		{"same hosts", model([]string{"/"}, false, 8443), true},
		{"a host's routes changed: its chain kept", model([]string{"/", "/new"}, false, 8443), true},
		{"a host's chain changed", model([]string{"/", "/new"}, true, 8443), false},
		{"the listener's port changed", model([]string{"/", "/new"}, true, 9443), false},
		{"unchanged again", model([]string{"/", "/new"}, true, 9443), true},
	} {
		t.Run(step.name, func(t *testing.T) {
			got := TranslateCached(step.model, Options{}, c)
			checkUncached(t, got, Translate(step.model, Options{}))
			i := slices.IndexFunc(got.Listeners, func(m proto.Message) bool { return ResourceName(m) == HTTPSListenerName })
			if i < 0 {
				t.Fatal("no HTTPS listener")
			}
			if same := got.Listeners[i] == previous; same != step.reused {
				t.Errorf("listener reused: %v, want %v", same, step.reused)
			}
			previous = got.Listeners[i]
		})
	}
}

// A cluster entry replaced or forgotten holds no messages: entries are
// made in blocks, which one live entry keeps whole.
func TestCacheLetsGoOfOldClusters(t *testing.T) {
	c := NewCache()
	model := func(address string, extra bool) *ir.Model {
		m := sharedModel(nil, nil)
		m.Clusters = []*ir.Cluster{{Name: "default/a/80", Endpoints: []ir.Endpoint{{Address: address, Port: 80}}}}
		if extra {
			m.Clusters = append(m.Clusters, &ir.Cluster{Name: "default/b/80", Endpoints: []ir.Endpoint{{Address: "10.0.0.2", Port: 80}}})
		}
		return m
	}
	TranslateCached(model("10.0.0.1", true), Options{}, c)
	a, b := c.clusters["default/a/80"], c.clusters["default/b/80"]
	TranslateCached(model("10.0.0.9", false), Options{}, c)
	for name, e := range map[string]*cachedCluster{"replaced": a, "forgotten": b} {
		if e.cluster != nil || e.endpoints != nil || e.in != nil {
			t.Errorf("%s entry still holds %v, %v, %v", name, e.cluster, e.endpoints, e.in)
		}
	}
	if e := c.clusters["default/a/80"]; e == nil || e == a || e.in.Endpoints[0].Address != "10.0.0.9" {
		t.Errorf("entry of the changed cluster: %+v", e)
	}
}
