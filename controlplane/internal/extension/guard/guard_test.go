package guard_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// config is a translation to mutate: deep copies of its listeners and
// route configurations.
type config struct {
	ls       []*listenerv3.Listener
	rcs      []*routev3.RouteConfiguration
	clusters []string
}

// configOf is a translation's listeners, route configurations and
// cluster names.
func configOf(res *translator.Resources) *config {
	c := &config{}
	for _, m := range res.Listeners {
		c.ls = append(c.ls, m.(*listenerv3.Listener))
	}
	for _, m := range res.Routes {
		c.rcs = append(c.rcs, m.(*routev3.RouteConfiguration))
	}
	for _, m := range res.Clusters {
		c.clusters = append(c.clusters, m.(*clusterv3.Cluster).GetName())
	}
	return c
}

func (c *config) clone() *config {
	out := &config{clusters: c.clusters}
	for _, l := range c.ls {
		out.ls = append(out.ls, proto.Clone(l).(*listenerv3.Listener))
	}
	for _, rc := range c.rcs {
		out.rcs = append(out.rcs, proto.Clone(rc).(*routev3.RouteConfiguration))
	}
	return out
}

func (c *config) guard() guard.Config { return guard.Config{Listeners: c.ls, Routes: c.rcs} }

// eachHCM calls f on every connection manager of the listeners (the
// first n that f returns true for are repacked).
func (c *config) eachHCM(f func(l *listenerv3.Listener, fc *listenerv3.FilterChain, i int, h *hcmv3.HttpConnectionManager) bool) bool {
	any := false
	for _, l := range c.ls {
		fcs := l.GetFilterChains()
		if d := l.GetDefaultFilterChain(); d != nil {
			fcs = append(slices.Clip(fcs), d)
		}
		for _, fc := range fcs {
			for i, flt := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if !flt.GetTypedConfig().MessageIs(h) || flt.GetTypedConfig().UnmarshalTo(h) != nil {
					continue
				}
				if f(l, fc, i, h) {
					fc.Filters[i].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(h)}
					any = true
				}
			}
		}
	}
	return any
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func isType(f *hcmv3.HttpFilter, name string) bool {
	return strings.HasSuffix(f.GetTypedConfig().GetTypeUrl(), "."+name)
}

// routes are the routes of every virtual host that send to one of ours.
func (c *config) vhosts() []*routev3.VirtualHost {
	var out []*routev3.VirtualHost
	for _, rc := range c.rcs {
		out = append(out, rc.GetVirtualHosts()...)
	}
	return out
}

func (c *config) ours(name string) bool { return slices.Contains(c.clusters, name) }

func pick[T any](rng *rand.Rand, xs []T) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[rng.IntN(len(xs))], true
}

// mutation is an answer an extension could give.
type mutation struct {
	name string
	// legit: it only adds; the guard must accept it.
	legit bool
	apply func(c *config, rng *rand.Rand) bool
}

func dropType(typ string) mutation {
	return mutation{name: "drop the " + typ + " filters", apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			n := len(h.HttpFilters)
			h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return isType(f, typ) })
			return len(h.HttpFilters) != n
		})
	}}
}

var mutations = []mutation{
	{name: "rename the listener and drop ext_authz", apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(l *listenerv3.Listener, fc *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			n := len(h.HttpFilters)
			h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return isType(f, "ExtAuthz") })
			if len(h.HttpFilters) == n {
				return false
			}
			l.Name, fc.Name = l.GetName()+"-copy", fc.GetName()+"-copy"
			return true
		})
	}},
	dropType("ExtAuthz"), dropType("RBAC"), dropType("JwtAuthentication"), dropType("ExternalProcessor"),
	dropType("RateLimit"), dropType("LocalRateLimit"), dropType("Cors"),
	{name: "a catch-all route first, copying a route with a filter off", apply: func(c *config, rng *rand.Rand) bool {
		var public []*routev3.VirtualHost
		for _, vh := range c.vhosts() {
			if slices.ContainsFunc(vh.GetRoutes(), func(r *routev3.Route) bool { return offSomewhere(r) && r.GetRoute() != nil }) {
				public = append(public, vh)
			}
		}
		vh, ok := pick(rng, public)
		if !ok {
			return false
		}
		i := slices.IndexFunc(vh.GetRoutes(), func(r *routev3.Route) bool { return offSomewhere(r) && r.GetRoute() != nil })
		catchAll := proto.Clone(vh.Routes[i]).(*routev3.Route)
		catchAll.Name, catchAll.Match = "catch-all", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
		vh.Routes = append([]*routev3.Route{catchAll}, vh.Routes...)
		return true
	}},
	{name: "the HTTP connection manager swapped for tcp_proxy", apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(_ *listenerv3.Listener, fc *listenerv3.FilterChain, i int, _ *hcmv3.HttpConnectionManager) bool {
			if len(c.clusters) == 0 {
				return false
			}
			fc.Filters[i] = &listenerv3.Filter{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{
				TypedConfig: mustAny(&tcpv3.TcpProxy{StatPrefix: "x", ClusterSpecifier: &tcpv3.TcpProxy_Cluster{Cluster: c.clusters[0]}})}}
			return false // not repacked: the filter is replaced
		}) || c.swapped()
	}},
	{name: "a filter turned off on one route", apply: func(c *config, rng *rand.Rand) bool {
		var names []string
		c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			for _, f := range h.GetHttpFilters() {
				if slices.ContainsFunc(protectingNames, func(n string) bool { return isType(f, n) }) {
					names = append(names, f.GetName())
				}
			}
			return false
		})
		name, ok := pick(rng, names)
		vh, ok2 := pick(rng, c.vhosts())
		if !ok || !ok2 || len(vh.GetRoutes()) == 0 {
			return false
		}
		r := vh.Routes[rng.IntN(len(vh.Routes))]
		if r.TypedPerFilterConfig == nil {
			r.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		r.TypedPerFilterConfig[name] = mustAny(&routev3.FilterConfig{Disabled: true})
		return true
	}},
	{name: "the routes reversed", apply: func(c *config, rng *rand.Rand) bool {
		var many []*routev3.VirtualHost
		for _, vh := range c.vhosts() {
			if len(vh.GetRoutes()) > 1 {
				many = append(many, vh)
			}
		}
		vh, ok := pick(rng, many)
		if ok {
			slices.Reverse(vh.Routes)
		}
		return ok
	}},
	{name: "the first route removed", apply: func(c *config, rng *rand.Rand) bool {
		var many []*routev3.VirtualHost
		for _, vh := range c.vhosts() {
			if len(vh.GetRoutes()) > 1 {
				many = append(many, vh)
			}
		}
		vh, ok := pick(rng, many)
		if ok {
			vh.Routes = vh.Routes[1:]
		}
		return ok
	}},
	{name: "a virtual host takes every host", apply: func(c *config, rng *rand.Rand) bool {
		rc, ok := pick(rng, c.rcs)
		if !ok || len(rc.GetVirtualHosts()) < 2 {
			return false
		}
		vh := rc.VirtualHosts[rng.IntN(len(rc.VirtualHosts))]
		for _, o := range rc.GetVirtualHosts() {
			o.Domains = slices.DeleteFunc(o.Domains, func(d string) bool { return d == "*" })
		}
		vh.Domains = append(vh.Domains, "*")
		return true
	}},
	{name: "ext_authz fails open", apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			changed := false
			for _, f := range h.GetHttpFilters() {
				a := &extauthzv3.ExtAuthz{}
				if f.GetTypedConfig().UnmarshalTo(a) == nil && !a.GetFailureModeAllow() {
					a.FailureModeAllow = true
					f.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(a)}
					changed = true
				}
			}
			return changed
		})
	}},
	{name: "TLS removed", apply: func(c *config, _ *rand.Rand) bool {
		any := false
		for _, l := range c.ls {
			for _, fc := range l.GetFilterChains() {
				if fc.GetTransportSocket() != nil {
					fc.TransportSocket, any = nil, true
				}
			}
		}
		return any
	}},
	{name: "path normalization off", apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			if !h.GetNormalizePath().GetValue() {
				return false
			}
			h.NormalizePath = wrapperspb.Bool(false)
			return true
		})
	}},
	{name: "a redirect sent upstream", apply: func(c *config, rng *rand.Rand) bool {
		var redirects []*routev3.Route
		for _, vh := range c.vhosts() {
			for _, r := range vh.GetRoutes() {
				if r.GetRedirect() != nil || r.GetDirectResponse() != nil {
					redirects = append(redirects, r)
				}
			}
		}
		r, ok := pick(rng, redirects)
		if !ok || len(c.clusters) == 0 {
			return false
		}
		r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: c.clusters[0]}}}
		return true
	}},
	{name: "a new filter chain without the protecting filters", apply: func(c *config, _ *rand.Rand) bool {
		for _, l := range c.ls {
			if len(l.GetFilterChains()) == 0 {
				continue
			}
			fc := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
			fc.Name = "vendor-chain"
			fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: []string{"vendor.example.net"}}
			l.FilterChains = append(l.FilterChains, fc)
			cc := &config{ls: []*listenerv3.Listener{{FilterChains: []*listenerv3.FilterChain{fc}}}}
			return cc.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
				h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool {
					return slices.ContainsFunc(protectingNames, func(n string) bool { return isType(f, n) })
				})
				return true
			})
		}
		return false
	}},

	{name: "a response header added", legit: true, apply: func(c *config, rng *rand.Rand) bool {
		vh, ok := pick(rng, c.vhosts())
		if !ok || len(vh.GetRoutes()) == 0 {
			return false
		}
		r := vh.Routes[rng.IntN(len(vh.Routes))]
		r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-vendor", Value: "1"}})
		return true
	}},
	{name: "a filter added before the router", legit: true, apply: func(c *config, _ *rand.Rand) bool {
		return c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			h.HttpFilters = append([]*hcmv3.HttpFilter{
				{Name: "vendor.buffer", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(1024)})}},
				{Name: "vendor.rbac", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&rbacv3.RBAC{})}},
			}, h.HttpFilters...)
			return true
		})
	}},
	{name: "a route added behind the same protection as its neighbour", legit: true, apply: func(c *config, rng *rand.Rand) bool {
		var with []*routev3.VirtualHost
		for _, vh := range c.vhosts() {
			if lastPrefix(vh, c) >= 0 {
				with = append(with, vh)
			}
		}
		vh, ok := pick(rng, with)
		if !ok {
			return false
		}
		i := lastPrefix(vh, c)
		added := proto.Clone(vh.Routes[i]).(*routev3.Route)
		added.Name = "vendor-added"
		added.Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: strings.TrimSuffix(vh.Routes[i].GetMatch().GetPrefix(), "/") + "/vendor-added/"}}
		vh.Routes = slices.Insert(vh.Routes, i, added)
		return true
	}},
	{name: "a listener renamed", legit: true, apply: func(c *config, _ *rand.Rand) bool {
		for _, l := range c.ls {
			l.Name += "-renamed"
		}
		return len(c.ls) > 0
	}},
	{name: "a route to a cluster of the extension's", legit: true, apply: func(c *config, rng *rand.Rand) bool {
		vh, ok := pick(rng, c.vhosts())
		if !ok {
			return false
		}
		vh.Routes = append([]*routev3.Route{{Name: "vendor", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "vendor-upstream"}}}}}, vh.Routes...)
		return true
	}},
}

// swapped reports whether a tcp_proxy replaced a connection manager.
func (c *config) swapped() bool {
	for _, l := range c.ls {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				if f.GetName() == "envoy.filters.network.tcp_proxy" && f.GetTypedConfig().MessageIs((*tcpv3.TcpProxy)(nil)) {
					return true
				}
			}
		}
	}
	return false
}

// lastPrefix is the index of the last route of vh with a prefix match
// that sends to one of ours; -1 for none.
func lastPrefix(vh *routev3.VirtualHost, c *config) int {
	for i := len(vh.GetRoutes()) - 1; i >= 0; i-- {
		r := vh.Routes[i]
		if _, ok := r.GetMatch().GetPathSpecifier().(*routev3.RouteMatch_Prefix); ok && c.ours(r.GetRoute().GetCluster()) {
			return i
		}
	}
	return -1
}

func offSomewhere(r *routev3.Route) bool {
	for _, a := range r.GetTypedPerFilterConfig() {
		if disables(a) {
			return true
		}
	}
	return false
}

// requests are every chain's place with every host and path the two
// configurations name, and some they do not.
func requests(before, after *config) []request {
	keys := map[string]bool{}
	var hosts, paths []string
	for _, c := range []*config{before, after} {
		for k := range oracleChains(c.ls) {
			keys[k] = true
		}
		for _, vh := range c.vhosts() {
			for _, d := range vh.GetDomains() {
				d = strings.ToLower(strings.TrimSuffix(d, ":*"))
				switch {
				case d == "*":
					d = "any.invalid"
				case strings.HasPrefix(d, "*"):
					d = "any" + d[1:]
				}
				hosts = append(hosts, d)
			}
			for _, r := range vh.GetRoutes() {
				switch s := r.GetMatch().GetPathSpecifier().(type) {
				case *routev3.RouteMatch_Prefix:
					paths = append(paths, s.Prefix, strings.TrimSuffix(s.Prefix, "/")+"/zz")
				case *routev3.RouteMatch_Path:
					paths = append(paths, s.Path)
				case *routev3.RouteMatch_PathSeparatedPrefix:
					paths = append(paths, s.PathSeparatedPrefix, s.PathSeparatedPrefix+"/zz")
				}
			}
		}
	}
	hosts = append(hosts, "unknown.invalid")
	paths = append(paths, "/", "/zz-unrouted")
	slices.Sort(hosts)
	slices.Sort(paths)
	var out []request
	for k := range keys {
		for _, h := range slices.Compact(hosts) {
			for _, p := range slices.Compact(paths) {
				out = append(out, request{chainKey: k, host: h, path: p})
			}
		}
	}
	return out
}

// TestAnswersThatWidenAreRefused is the property: over every golden case
// of the pipeline (their translations hold every protecting filter
// Portcullis makes) and answers generated from each, every answer the
// guard accepts serves no request more openly (the oracle follows every
// request the two configurations name); every legitimate answer is
// accepted; and each widening kind of answer did widen somewhere, so
// that none of them passes untested.
func TestAnswersThatWidenAreRefused(t *testing.T) {
	dirs, err := goldencase.Runnable(filepath.Join("..", "..", "pipeline", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	widened, refusedLegit := map[string]int{}, 0
	for _, dir := range dirs {
		set, err := goldencase.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := goldencase.Options(dir)
		if err != nil {
			t.Fatal(err)
		}
		res := pipeline.Run(set, opts).Resources
		base := configOf(res)
		before := newView(base.ls, base.rcs)
		for seed := range uint64(3) {
			for _, mu := range mutations {
				after := base.clone()
				if !mu.apply(after, rand.New(rand.NewPCG(seed, uint64(len(dir))))) {
					continue
				}
				vs := guard.CheckListeners(base.ours, base.guard(), after.guard())
				av := newView(after.ls, after.rcs)
				var why string
				for _, r := range requests(base, after) {
					if why = widens(base.ours, before, av, r); why != "" {
						why = fmt.Sprintf("%s (host %s, path %s)", why, r.host, r.path)
						break
					}
				}
				name := filepath.Base(dir) + ": " + mu.name
				switch {
				case why != "" && len(vs) == 0:
					t.Errorf("%s: accepted, but it widens: %s", name, why)
				case mu.legit && len(vs) > 0:
					refusedLegit++
					t.Errorf("%s: a legitimate answer refused: %v", name, vs)
				}
				if why != "" {
					widened[mu.name]++
				}
			}
		}
	}
	for _, mu := range mutations {
		if !mu.legit && widened[mu.name] == 0 {
			t.Errorf("%q never widened anything in any case: the suite does not exercise it", mu.name)
		}
	}
	t.Logf("%d cases; widening answers by kind: %v", len(dirs), widened)
}

func TestEndpoints(t *testing.T) {
	own := netip.MustParseAddr("192.0.2.10")
	socket := func(host string) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 22}}}}
	}
	for _, tc := range []struct {
		name string
		addr *corev3.Address
		bad  bool
	}{
		{"loopback", socket("127.0.0.1"), true},
		{"loopback v6", socket("::1"), true},
		{"mapped loopback", socket("::ffff:127.0.0.1"), true},
		{"metadata service", socket("169.254.169.254"), true},
		{"localhost", socket("LocalHost."), true},
		{"own address", socket("192.0.2.10"), true},
		{"unspecified", socket("0.0.0.0"), true},
		{"unix socket", &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/run/x.sock"}}}, true},
		{"pod address", socket("10.0.0.1"), false},
		{"DNS name", socket("auth.vendor.svc"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv3.Cluster{Name: "c", LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: tc.addr}}}}}}}}
			if got := guard.CheckEndpoints([]*clusterv3.Cluster{c}, []netip.Addr{own}); (len(got) > 0) != tc.bad {
				t.Errorf("violations %v, want refused=%v", got, tc.bad)
			}
		})
	}
}

// TestCheckRouteIsCheckVirtualHost: CheckRoute, the one-route shortcut
// of PostRouteModify, refuses exactly what comparing the whole virtual
// host refuses, for every route of every golden case's translation, turned
// off for each protecting filter, and with a header added.
func TestCheckRouteIsCheckVirtualHost(t *testing.T) {
	dirs, err := goldencase.Runnable(filepath.Join("..", "..", "pipeline", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, dir := range dirs {
		set, err := goldencase.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := goldencase.Options(dir)
		if err != nil {
			t.Fatal(err)
		}
		c := configOf(pipeline.Run(set, opts).Resources)
		var hcms []*hcmv3.HttpConnectionManager
		c.eachHCM(func(_ *listenerv3.Listener, _ *listenerv3.FilterChain, _ int, h *hcmv3.HttpConnectionManager) bool {
			hcms = append(hcms, h)
			return false
		})
		fs := guard.ProtectingFilters(hcms...)
		for _, vh := range c.vhosts() {
			for k, r := range vh.GetRoutes() {
				var answers []*routev3.Route
				for name := range fs {
					off := proto.Clone(r).(*routev3.Route)
					if off.TypedPerFilterConfig == nil {
						off.TypedPerFilterConfig = map[string]*anypb.Any{}
					}
					off.TypedPerFilterConfig[name] = mustAny(&routev3.FilterConfig{Disabled: true})
					answers = append(answers, off)
				}
				header := proto.Clone(r).(*routev3.Route)
				header.ResponseHeadersToAdd = append(header.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x", Value: "1"}})
				answers = append(answers, header)
				for _, out := range answers {
					with := proto.Clone(vh).(*routev3.VirtualHost)
					with.Routes[k] = out
					one, whole := guard.CheckRoute(fs, c.ours, vh, k, out), guard.CheckVirtualHost(fs, c.ours, vh, with)
					if (len(one) == 0) != (len(whole) == 0) {
						t.Errorf("%s: virtual host %q route %d: CheckRoute %v, CheckVirtualHost %v", filepath.Base(dir), vh.GetName(), k, one, whole)
					}
					compared++
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d answers compared", compared)
}
