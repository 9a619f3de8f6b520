package translator

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// misdirectedHostName names the virtual host of the misdirected requests
// (not a host name: it has a space).
const misdirectedHostName = "misdirected requests"

// misdirectedHost answers 421 (Misdirected Request) to every request for
// the host names (ir.SecureVirtualHost.Misdirected): another filter
// chain serves them, with its own certificate and filters, which a
// connection made for this host's SNI must not bypass.
func misdirectedHost(names []string) *routev3.VirtualHost {
	return &routev3.VirtualHost{
		Name:    misdirectedHostName,
		Domains: names,
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 421}},
		}},
	}
}
