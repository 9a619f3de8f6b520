package translator

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// redirect answers with a redirect; matched is the path the route matched
// (a prefix replacement replaces it).
//
// The port: every HCM strips the port of the request's host before
// routing (strip_any_host_port), so without port_redirect the Location
// has no port, which means the default port of its scheme. That is what
// a changed scheme without a port must give (Envoy would otherwise keep
// a request's non-default port with the new scheme); without a scheme
// either, the port is that of the request's scheme, not the one the
// client used. A port that is the scheme's default is left out: the
// same Location, written the usual way.
//
// With keepHostPort (Gateway API listeners of their own port, whose HCM
// keeps the host's port) a redirect without a port keeps the port the
// client used, as the Gateway API asks (the listener's); one that changes
// the scheme names the new scheme's default port, which Envoy would not
// put in place of the client's.
func redirect(rd *ir.Redirect, matched string, keepHostPort bool) *routev3.RedirectAction {
	a := &routev3.RedirectAction{HostRedirect: rd.Hostname, ResponseCode: redirectCode(rd.StatusCode)}
	if rd.Scheme != "" {
		a.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: rd.Scheme}
	}
	switch {
	case keepHostPort && rd.Scheme != "" && (rd.Port == 0 || rd.Port == defaultPort(rd.Scheme)):
		a.PortRedirect = defaultPort(rd.Scheme)
	case rd.Port != 0 && rd.Port != defaultPort(rd.Scheme):
		a.PortRedirect = rd.Port
	}
	switch p := rd.Path; {
	case p == nil:
	case p.Prefix:
		a.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: prefixRewrite(matched, p.Value)}
	default:
		// path_redirect keeps the request's query string.
		a.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p.Value}
	}
	return a
}

// defaultPort is the port a URL of the scheme means when it has none; 0
// for no scheme (the request's, unknown here).
func defaultPort(scheme string) uint32 {
	switch scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

func redirectCode(status int) routev3.RedirectAction_RedirectResponseCode {
	switch status {
	case 301:
		return routev3.RedirectAction_MOVED_PERMANENTLY
	case 303:
		return routev3.RedirectAction_SEE_OTHER
	case 307:
		return routev3.RedirectAction_TEMPORARY_REDIRECT
	case 308:
		return routev3.RedirectAction_PERMANENT_REDIRECT
	}
	return routev3.RedirectAction_FOUND
}
