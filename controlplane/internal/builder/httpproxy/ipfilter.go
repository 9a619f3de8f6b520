package httpproxy

import (
	"fmt"
	"net/netip"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// hostIPFilter validates the virtual host's ipAllowPolicy or ipDenyPolicy,
// which its routes (and the routes it includes) inherit unless they have
// their own. An invalid one is an error on the root: it is not served
// rather than served unfiltered.
func hostIPFilter(vh *contourv1.VirtualHost, st *status.Object) *ir.IPFilter {
	f, reason, err := ipFilter(vh.IPAllowFilterPolicy, vh.IPDenyFilterPolicy)
	if err != nil {
		st.AddError(contourv1.ConditionTypeIPFilterError, reason, "Spec.VirtualHost: "+err.Error())
	}
	return f
}

// routeIPFilter sets the route's IP filter: its own, which replaces the
// virtual host's (host), or else the host's.
func routeIPFilter(rt *Route, r *contourv1.Route, host *ir.IPFilter, errs *routeErrors) {
	if len(r.IPAllowFilterPolicy) == 0 && len(r.IPDenyFilterPolicy) == 0 {
		rt.IPFilter = host
		return
	}
	f, reason, err := ipFilter(r.IPAllowFilterPolicy, r.IPDenyFilterPolicy)
	if err != nil {
		errs.add(contourv1.ConditionTypeIPFilterError, reason, "%v", err)
		return
	}
	rt.IPFilter = f
}

// ipFilter validates an allow or a deny list (not both, as in Contour:
// which would win is not obvious); nil for neither. A CIDR may be a single
// address (a /32 or /128); its host bits are cleared, as Envoy would.
func ipFilter(allow, deny []contourv1.IPFilterPolicy) (*ir.IPFilter, string, error) {
	if len(allow) > 0 && len(deny) > 0 {
		return nil, status.ReasonIncompatibleIPAddressFilters, fmt.Errorf("ipAllowPolicy and ipDenyPolicy cannot both be set: use one list")
	}
	f := &ir.IPFilter{Allow: len(allow) > 0}
	list, field := allow, "ipAllowPolicy"
	if !f.Allow {
		list, field = deny, "ipDenyPolicy"
	}
	if len(list) == 0 {
		return nil, "", nil
	}
	for i, p := range list {
		rule, err := ipRule(p)
		if err != nil {
			return nil, status.ReasonIPFilterPolicyNotValid, fmt.Errorf("%s[%d]: %v", field, i, err)
		}
		f.Rules = append(f.Rules, rule)
	}
	return f, "", nil
}

func ipRule(p contourv1.IPFilterPolicy) (ir.IPRule, error) {
	var rule ir.IPRule
	switch p.Source {
	case contourv1.IPFilterSourcePeer:
	case contourv1.IPFilterSourceRemote:
		rule.Remote = true
	default:
		return rule, fmt.Errorf("source %q is not Peer or Remote", p.Source)
	}
	prefix, err := parseCIDR(p.CIDR)
	if err != nil {
		return rule, err
	}
	rule.CIDR = prefix.String()
	return rule, nil
}

// parseCIDR reads an address block or a single address (IPv4, IPv6, or
// an IPv4-mapped IPv6 address, which is taken as the IPv4 one).
func parseCIDR(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("cidr %q is not an address block or an address", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("cidr %q is not an address block or an address", s)
	}
	return p.Masked(), nil
}
