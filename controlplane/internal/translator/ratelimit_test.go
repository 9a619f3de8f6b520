package translator

import (
	"testing"
	"time"

	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestLocalRateLimitTranslation(t *testing.T) {
	got := localRateLimit(&ir.LocalRateLimit{Requests: 10, Burst: 5, Interval: time.Minute, Status: 503,
		ResponseHeaders: []ir.HeaderValue{{Name: "x-limited", Value: "100%"}}}, "vhost.a.example.com")
	b := got.GetTokenBucket()
	if b.GetMaxTokens() != 15 || b.GetTokensPerFill().GetValue() != 10 || b.GetFillInterval().AsDuration() != time.Minute {
		t.Errorf("bucket %v", b)
	}
	if got.GetStatPrefix() != "vhost.a.example.com" || got.GetStatus().GetCode() != 503 ||
		got.GetFilterEnabled().GetDefaultValue().GetNumerator() != 100 || got.GetFilterEnforced().GetDefaultValue().GetNumerator() != 100 {
		t.Errorf("limit %v", got)
	}
	if h := got.GetResponseHeadersToAdd(); len(h) != 1 || h[0].GetHeader().GetValue() != "100%%" {
		t.Errorf("headers %v: a literal %% must be escaped", h)
	}
	if s := localRateLimit(&ir.LocalRateLimit{Requests: 1, Interval: time.Second}, "route").GetStatus(); s != nil {
		t.Errorf("status %v, want Envoy's default", s)
	}
}

// The filter is in an HCM only when a host or a route has a limit,
// disabled; hosts and routes configure it; two hosts with the same routes
// and the same limit, the host's or the routes', are not merged (one
// bucket each).
func TestLocalRateLimitFilter(t *testing.T) {
	routes := []*ir.Route{{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}
	plain := &ir.VirtualHost{FQDN: "a.example.com", Routes: routes}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain}); h.rateLimits {
		t.Error("rate limits without a limit")
	}
	limit := &ir.LocalRateLimit{Requests: 1, Interval: time.Second}
	routeLimited := &ir.VirtualHost{FQDN: "r.example.com", Routes: []*ir.Route{{RateLimit: limit, Clusters: routes[0].Clusters}}}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain, routeLimited}); !h.rateLimits {
		t.Error("no rate limits with a route's limit")
	}
	b := &ir.VirtualHost{FQDN: "b.example.com", Routes: routes, RateLimit: limit}
	c := &ir.VirtualHost{FQDN: "c.example.com", Routes: routes, RateLimit: limit}
	hosts := []*ir.VirtualHost{plain, b, c}
	h := (hcmSettings{}).withRoutes(hosts)
	fs := hcmHTTPFilters(h)
	if len(fs) != 2 || fs[0].GetName() != LocalRateLimitFilterName || !fs[0].GetDisabled() {
		t.Fatalf("filters %v, want a disabled local rate limit filter", fs)
	}
	rc, _, rb := routeConfig("rc", hosts, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	if len(rc.GetVirtualHosts()) != 3 {
		t.Fatalf("hosts with a limit merged: %v", rc.GetVirtualHosts())
	}
	var l localratelimitv3.LocalRateLimit
	if err := rc.GetVirtualHosts()[1].GetTypedPerFilterConfig()[LocalRateLimitFilterName].UnmarshalTo(&l); err != nil || l.GetStatPrefix() != "vhost.b.example.com" {
		t.Errorf("host config %v (%v)", rc.GetVirtualHosts()[1].GetTypedPerFilterConfig(), err)
	}
	r := route(routeLimited.Routes[0], routeSettings{filters: h.filters()})
	if r.GetTypedPerFilterConfig()[LocalRateLimitFilterName] == nil {
		t.Errorf("route config %v", r.GetTypedPerFilterConfig())
	}
	// Nor are two hosts whose identical routes have the same limit: each
	// route keeps a bucket of its own; the plain hosts still merge.
	twin := &ir.VirtualHost{FQDN: "s.example.com", Routes: []*ir.Route{{RateLimit: limit, Clusters: routes[0].Clusters}}}
	plain2 := &ir.VirtualHost{FQDN: "p.example.com", Routes: routes}
	hosts = []*ir.VirtualHost{plain, plain2, routeLimited, twin}
	h = (hcmSettings{}).withRoutes(hosts)
	rc, _, rb = routeConfig("rc", hosts, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	if got := len(rc.GetVirtualHosts()); got != 3 {
		t.Errorf("%d virtual hosts, want 3 (the plain hosts merged, the routes with a limit not): %v", got, rc.GetVirtualHosts())
	}
}
