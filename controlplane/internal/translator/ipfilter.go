package translator

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// RBACFilterName is Envoy's RBAC filter, which applies the IP filters.
const RBACFilterName = "envoy.filters.http.rbac"

// ipFilterPolicyName names the one policy of an IP filter's rules (Envoy
// counts its matches under it).
const ipFilterPolicyName = "ip-filter"

// ipFilterFilter is the RBAC filter of an HCM some of whose routes filter
// clients by address: without rules and disabled, it runs only on those
// routes, with their rules (typed_per_filter_config).
type ipFilterFilter struct{}

func (ipFilterFilter) name() string { return RBACFilterName }

func (ipFilterFilter) needed(h hcmSettings) bool { return h.ipFilters }

func (ipFilterFilter) httpFilters(hcmSettings) []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{disabledByDefault(typedHTTPFilter(RBACFilterName, &rbacv3.RBAC{}))}
}

func (ipFilterFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.IPFilter == nil {
		return "", nil
	}
	return RBACFilterName, &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: ipFilterRules(r.IPFilter)}}
}

// ipFilterRules is one policy whose principals are the filter's blocks:
// with ALLOW Envoy answers 403 to requests no principal matches, with
// DENY to those one matches. A Peer block is the connection's address
// (direct_remote_ip), a Remote one the address Envoy takes to be the
// client's (remote_ip: the peer's, since the HCMs trust no
// X-Forwarded-For hop).
func ipFilterRules(f *ir.IPFilter) *rbacconfigv3.RBAC {
	action := rbacconfigv3.RBAC_DENY
	if f.Allow {
		action = rbacconfigv3.RBAC_ALLOW
	}
	principals := make([]*rbacconfigv3.Principal, len(f.Rules))
	for i, rule := range f.Rules {
		cidr := cidrRange(rule.CIDR)
		if rule.Remote {
			principals[i] = &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cidr}}
		} else {
			principals[i] = &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr}}
		}
	}
	return &rbacconfigv3.RBAC{
		Action: action,
		Policies: map[string]*rbacconfigv3.Policy{ipFilterPolicyName: {
			Permissions: []*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_Any{Any: true}}},
			Principals:  principals,
		}},
	}
}

// cidrRange is a block as Envoy takes it; the builder made it canonical.
func cidrRange(cidr string) *corev3.CidrRange {
	p := netip.MustParsePrefix(cidr)
	return &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(prefixLen(p))}
}

// prefixLen is the length of a valid prefix, 0 to 128 (MustParsePrefix
// refuses the others).
func prefixLen(p netip.Prefix) uint32 {
	bits := p.Bits()
	if bits < 0 || bits > 128 {
		panic("translator: not a valid prefix: " + p.String())
	}
	return uint32(bits)
}

// routesFilterIPs says whether a route of hosts filters clients by
// address.
func routesFilterIPs(hosts []*ir.VirtualHost) bool {
	for _, vh := range hosts {
		for _, r := range vh.Routes {
			if r.IPFilter != nil {
				return true
			}
		}
	}
	return false
}
