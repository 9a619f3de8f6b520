package translator

import (
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestLuaString(t *testing.T) {
	for in, want := range map[string]string{
		"abc":         `"abc"`,
		"a\"]]..os()": `"a\034\093\093\046\046os\040\041"`,
		"/p\n":        `"\047p\010"`,
	} {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCookieRewriteLua(t *testing.T) {
	yes, no := true, false
	code := cookieRewriteLua([]ir.CookieRewrite{{Name: "s", Path: "/a", Domain: "d.example", Secure: &yes, SameSite: "Strict"}, {Name: "t", Secure: &no}})
	for _, want := range []string{
		`["s"] = {path = "\047a", domain = "d\046example", secure = true, samesite = "Strict", },`,
		`["t"] = {secure = false, },`,
		"function envoy_on_response(response_handle)",
	} {
		if !strings.Contains(code, want) {
			t.Errorf("code lacks %q:\n%s", want, code)
		}
	}
}

// The Lua filter is in an HCM only when one of its routes or clusters
// rewrites cookies, disabled there, and enabled on those routes; a
// cluster's own rewrites make the route's clusters weighted.
func TestCookieFilter(t *testing.T) {
	plain := &ir.VirtualHost{FQDN: "a", Routes: []*ir.Route{{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain}); h.cookies {
		t.Error("cookies without rewrites")
	}
	routeLevel := &ir.Route{CookieRewrites: []ir.CookieRewrite{{Name: "s", SameSite: "Lax"}}, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}
	clusterLevel := &ir.Route{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1, CookieRewrites: []ir.CookieRewrite{{Name: "s", SameSite: "Lax"}}}}}
	for _, r := range []*ir.Route{routeLevel, clusterLevel} {
		h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain, {FQDN: "b", Routes: []*ir.Route{r}}})
		if !h.cookies {
			t.Fatalf("no cookies for %+v", r)
		}
		var lua bool
		for _, f := range hcmHTTPFilters(h) {
			if f.GetName() == LuaFilterName {
				lua = f.GetDisabled()
			}
		}
		if !lua {
			t.Errorf("no disabled Lua filter in %v", hcmHTTPFilters(h))
		}
		out := route(r, routeSettings{filters: h.filters()})
		_, onRoute := out.GetTypedPerFilterConfig()[LuaFilterName]
		if onRoute != (r == routeLevel) {
			t.Errorf("route config %v", out.GetTypedPerFilterConfig())
		}
		if r == clusterLevel {
			wc := out.GetRoute().GetWeightedClusters().GetClusters()
			if len(wc) != 1 || wc[0].GetTypedPerFilterConfig()[LuaFilterName] == nil {
				t.Errorf("cluster config %v", out.GetRoute())
			}
		}
	}
}
