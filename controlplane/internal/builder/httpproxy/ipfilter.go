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
	f, errs := ipFilter(vh.IPAllowFilterPolicy, vh.IPDenyFilterPolicy)
	for _, e := range errs {
		st.AddError(contourv1.ConditionTypeIPFilterError, e.reason, "Spec.VirtualHost: "+e.msg)
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
	f, ferrs := ipFilter(r.IPAllowFilterPolicy, r.IPDenyFilterPolicy)
	if len(ferrs) > 0 {
		for _, e := range ferrs {
			errs.add(contourv1.ConditionTypeIPFilterError, e.reason, "%s", e.msg)
		}
		return
	}
	rt.IPFilter = f
}

// ipFilterError is one error of an IP filter: its reason and message.
type ipFilterError struct{ reason, msg string }

// ipFilter validates an allow or a deny list (not both, as in Contour:
// which would win is not obvious); nil for neither. A CIDR may be a single
// address (a /32 or /128); its host bits are cleared, as Envoy would. As
// Contour, each CIDR that does not parse is an InvalidCIDR error, and a
// list with any error is also IPFilterPolicyNotValid; a filter with errors
// is nil (its caller does not serve what it guards).
func ipFilter(allow, deny []contourv1.IPFilterPolicy) (*ir.IPFilter, []ipFilterError) {
	if len(allow) > 0 && len(deny) > 0 {
		return nil, []ipFilterError{{status.ReasonIncompatibleIPAddressFilters, "ipAllowPolicy and ipDenyPolicy cannot both be set: use one list"}}
	}
	list, field := allow, "ipAllowPolicy"
	if len(allow) == 0 {
		list, field = deny, "ipDenyPolicy"
	}
	if len(list) == 0 {
		return nil, nil
	}
	f := &ir.IPFilter{Allow: len(allow) > 0}
	var errs []ipFilterError
	var invalid string
	for i, p := range list {
		rule, badCIDR, err := ipRule(p)
		if err != nil {
			if badCIDR {
				errs = append(errs, ipFilterError{status.ReasonInvalidCIDR, fmt.Sprintf("%s[%d]: %v", field, i, err)})
			}
			if invalid == "" {
				invalid = fmt.Sprintf("%s[%d]: %v", field, i, err)
			}
			continue
		}
		f.Rules = append(f.Rules, rule)
	}
	if invalid != "" {
		return nil, append(errs, ipFilterError{status.ReasonIPFilterPolicyNotValid, invalid})
	}
	return f, nil
}

// ipRule is one rule of a list; badCIDR tells that its error is the CIDR.
func ipRule(p contourv1.IPFilterPolicy) (rule ir.IPRule, badCIDR bool, err error) {
	switch p.Source {
	case contourv1.IPFilterSourcePeer:
	case contourv1.IPFilterSourceRemote:
		rule.Remote = true
	default:
		return rule, false, fmt.Errorf("source %q is not Peer or Remote", p.Source)
	}
	prefix, err := parseCIDR(p.CIDR)
	if err != nil {
		return rule, true, err
	}
	rule.CIDR = prefix.String()
	return rule, false, nil
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
