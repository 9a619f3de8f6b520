package translator

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The jwt_authn filter is in a TLS host's own HCM when the host has
// providers, after the rate limits and before ext_authz, with one
// requirement per provider; its routes require theirs or disable it.
func TestJWTFilter(t *testing.T) {
	cache := 10 * time.Minute
	vh := &ir.SecureVirtualHost{
		VirtualHost: ir.VirtualHost{FQDN: "a.example.com", Routes: []*ir.Route{
			{JWTProvider: "idp", RateLimit: &ir.LocalRateLimit{Requests: 1, Interval: time.Second}, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}},
			{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}},
		}},
		Auth: &ir.ExtAuth{Cluster: "extension/a/b"},
		JWTProviders: []ir.JWTProvider{{Name: "idp", Issuer: "https://idp", Audiences: []string{"api"}, JWKSURI: "https://idp/jwks",
			JWKSCluster: "jwks/https/idp/443", JWKSTimeout: time.Second, CacheDuration: &cache, Forward: true}},
	}
	h := hostHCM(vh, everyHCM{})
	fs := hcmHTTPFilters(h)
	var names []string
	for _, f := range fs {
		names = append(names, f.GetName())
	}
	if len(names) != 4 || names[0] != LocalRateLimitFilterName || names[1] != JWTFilterName || names[2] != ExtAuthzFilterName {
		t.Fatalf("filters %v", names)
	}
	var cfg jwtv3.JwtAuthentication
	if err := fs[1].GetTypedConfig().UnmarshalTo(&cfg); err != nil {
		t.Fatal(err)
	}
	p := cfg.GetProviders()["idp"]
	if p.GetIssuer() != "https://idp" || !p.GetForward() || p.GetRemoteJwks().GetHttpUri().GetCluster() != "jwks/https/idp/443" ||
		p.GetRemoteJwks().GetCacheDuration().AsDuration() != cache || cfg.GetRequirementMap()["idp"].GetProviderName() != "idp" {
		t.Errorf("config %v", &cfg)
	}
	for i, want := range []string{"idp", ""} {
		var per jwtv3.PerRouteConfig
		if err := route(vh.Routes[i], routeSettings{filters: h.filters()}).GetTypedPerFilterConfig()[JWTFilterName].UnmarshalTo(&per); err != nil {
			t.Fatal(err)
		}
		if per.GetRequirementName() != want || per.GetDisabled() != (want == "") {
			t.Errorf("route %d: %v", i, &per)
		}
	}
	if globalHCM(&ir.Model{}).withRoutes([]*ir.VirtualHost{&vh.VirtualHost}).filters().has(indexOf(t, JWTFilterName)) {
		t.Error("a shared HCM has the jwt_authn filter")
	}
}

func indexOf(t *testing.T, name string) int {
	for i, f := range httpFilters {
		if f.name() == name {
			return i
		}
	}
	t.Fatalf("no filter %s", name)
	return -1
}

func TestDNSLookupFamily(t *testing.T) {
	for in, want := range map[string]clusterv3.Cluster_DnsLookupFamily{
		"": clusterv3.Cluster_V4_PREFERRED, "v4": clusterv3.Cluster_V4_ONLY, "v6": clusterv3.Cluster_V6_ONLY, "auto": clusterv3.Cluster_AUTO,
	} {
		if got := cluster(&ir.Cluster{Name: "c", DNSName: "a.example.com", DNSPort: 80, DNSLookupFamily: in}).GetDnsLookupFamily(); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
