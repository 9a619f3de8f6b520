package translator

import (
	"testing"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The RBAC filter is in an HCM only when one of its routes filters IPs,
// disabled there, and enabled on those routes with their rules; before
// every other filter.
func TestIPFilterFilter(t *testing.T) {
	plain := &ir.VirtualHost{FQDN: "a", Routes: []*ir.Route{{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain}); h.ipFilters {
		t.Error("IP filters without a route filtering")
	}
	filtered := &ir.Route{
		IPFilter: &ir.IPFilter{Allow: true, Rules: []ir.IPRule{{CIDR: "10.0.0.0/8"}, {CIDR: "2001:db8::1/128", Remote: true}}},
		Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}},
	}
	h := (hcmSettings{auth: &ir.ExtAuth{Cluster: "extension/a/b"}}).withRoutes([]*ir.VirtualHost{plain, {FQDN: "b", Routes: []*ir.Route{filtered}}})
	fs := hcmHTTPFilters(h)
	if len(fs) != 3 || fs[0].GetName() != RBACFilterName || !fs[0].GetDisabled() || fs[1].GetName() != ExtAuthzFilterName {
		t.Fatalf("filters %v, want a disabled RBAC filter first", fs)
	}
	if got := route(plain.Routes[0], routeSettings{filters: h.filters()}).GetTypedPerFilterConfig()[RBACFilterName]; got != nil {
		t.Errorf("a route without a filter configures RBAC: %v", got)
	}
	cfg := route(filtered, routeSettings{filters: h.filters()}).GetTypedPerFilterConfig()[RBACFilterName]
	var per rbacv3.RBACPerRoute
	if cfg == nil || cfg.UnmarshalTo(&per) != nil {
		t.Fatalf("route config %v", cfg)
	}
	rules := per.GetRbac().GetRules()
	p := rules.GetPolicies()[ipFilterPolicyName]
	if rules.GetAction() != rbacconfigv3.RBAC_ALLOW || len(p.GetPrincipals()) != 2 || !p.GetPermissions()[0].GetAny() {
		t.Fatalf("rules %v", rules)
	}
	if d := p.GetPrincipals()[0].GetDirectRemoteIp(); d.GetAddressPrefix() != "10.0.0.0" || d.GetPrefixLen().GetValue() != 8 {
		t.Errorf("peer principal %v", p.GetPrincipals()[0])
	}
	if r := p.GetPrincipals()[1].GetRemoteIp(); r.GetAddressPrefix() != "2001:db8::1" || r.GetPrefixLen().GetValue() != 128 {
		t.Errorf("remote principal %v", p.GetPrincipals()[1])
	}
	if got := ipFilterRules(&ir.IPFilter{Rules: []ir.IPRule{{CIDR: "0.0.0.0/0"}}}).GetAction(); got != rbacconfigv3.RBAC_DENY {
		t.Errorf("deny list action %v", got)
	}
}
