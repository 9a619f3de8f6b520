package translator

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestCORSPolicyTranslation(t *testing.T) {
	age := 90 * time.Second
	got := corsPolicy(&ir.CORSPolicy{
		AllowOrigins:     []ir.CORSOrigin{{Value: "*"}, {Value: "https://a.example.com"}, {Value: `https://.*\.example\.com`, Regex: true}},
		AllowMethods:     []string{"GET", "PUT"},
		AllowHeaders:     []string{"x-a", "x-b"},
		MaxAge:           &age,
		AllowCredentials: true,
	})
	if got.GetAllowMethods() != "GET,PUT" || got.GetAllowHeaders() != "x-a,x-b" || got.GetExposeHeaders() != "" || got.GetMaxAge() != "90" ||
		!got.GetAllowCredentials().GetValue() || got.GetAllowPrivateNetworkAccess() != nil {
		t.Errorf("policy %v", got)
	}
	o := got.GetAllowOriginStringMatch()
	if len(o) != 3 || o[0].GetExact() != "*" || !o[1].GetIgnoreCase() || o[1].GetExact() != "https://a.example.com" || o[2].GetSafeRegex().GetRegex() != `https://.*\.example\.com` {
		t.Errorf("origins %v", o)
	}
}

// The CORS filter is in an HCM only when one of its hosts has a policy;
// the policy is on the host; two hosts with identical routes but
// different policies are not merged.
func TestCORSFilterOnHosts(t *testing.T) {
	routes := []*ir.Route{{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}
	plain := &ir.VirtualHost{FQDN: "a.example.com", Routes: routes}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain}); h.cors {
		t.Error("CORS without a policy")
	}
	cors := &ir.VirtualHost{FQDN: "b.example.com", Routes: routes, CORS: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "*"}}, AllowMethods: []string{"GET"}}}
	hosts := []*ir.VirtualHost{plain, cors}
	h := (hcmSettings{}).withRoutes(hosts)
	fs := hcmHTTPFilters(h)
	if len(fs) != 2 || fs[0].GetName() != CORSFilterName || fs[0].GetDisabled() {
		t.Fatalf("filters %v, want the CORS filter, enabled", fs)
	}
	rc, _, rb := routeConfig("rc", hosts, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	if len(rc.GetVirtualHosts()) != 2 {
		t.Fatalf("hosts with different policies merged: %v", rc.GetVirtualHosts())
	}
	var withPolicy *routev3.VirtualHost
	for _, v := range rc.GetVirtualHosts() {
		if v.GetName() == "b.example.com" {
			withPolicy = v
		} else if v.GetTypedPerFilterConfig() != nil {
			t.Errorf("host without a policy configured: %v", v)
		}
	}
	var p corsv3.CorsPolicy
	if err := withPolicy.GetTypedPerFilterConfig()[CORSFilterName].UnmarshalTo(&p); err != nil || p.GetAllowMethods() != "GET" {
		t.Errorf("host config %v (%v)", withPolicy.GetTypedPerFilterConfig(), err)
	}
	same := &ir.VirtualHost{FQDN: "c.example.com", Routes: routes, CORS: cors.CORS}
	rc, _, rb = routeConfig("rc", []*ir.VirtualHost{plain, cors, same}, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	if len(rc.GetVirtualHosts()) != 2 {
		t.Errorf("hosts with the same routes and policy not merged: %v", rc.GetVirtualHosts())
	}
}

// A route's own policy (a Gateway API rule's CORS filter) puts the CORS
// filter in the HCM, and is the route's typed_per_filter_config, which
// Envoy takes in place of the host's.
func TestCORSFilterOnRoutes(t *testing.T) {
	policy := &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "https://a.example.com"}}, AllowMethods: []string{"PUT"}, AnswerUnmatchedPreflights: true}
	withCORS := &ir.Route{PathKind: ir.PathPrefix, Path: "/cors", CORS: policy, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}
	plain := &ir.Route{PathKind: ir.PathPrefix, Path: "/", Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}
	hosts := []*ir.VirtualHost{{FQDN: "a.example.com", Routes: []*ir.Route{withCORS, plain}}}
	h := (hcmSettings{}).withRoutes(hosts)
	if !h.cors {
		t.Fatal("a route's policy does not put the CORS filter in the HCM")
	}
	rc, _, rb := routeConfig("rc", hosts, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	vh := rc.GetVirtualHosts()[0]
	if vh.GetTypedPerFilterConfig() != nil {
		t.Errorf("the host got a policy: %v", vh.GetTypedPerFilterConfig())
	}
	var p corsv3.CorsPolicy
	for _, r := range vh.GetRoutes() {
		cfg := r.GetTypedPerFilterConfig()[CORSFilterName]
		switch r.GetMatch().GetPathSeparatedPrefix() {
		case "/cors":
			if err := cfg.UnmarshalTo(&p); err != nil || p.GetAllowMethods() != "PUT" || p.GetAllowOriginStringMatch()[0].GetExact() != "https://a.example.com" ||
				p.GetForwardNotMatchingPreflights() == nil || p.GetForwardNotMatchingPreflights().GetValue() {
				t.Errorf("route config %v (%v)", cfg, err)
			}
		default:
			if cfg != nil {
				t.Errorf("route %v without a policy configured: %v", r.GetMatch(), cfg)
			}
		}
	}
}
