package httpproxy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Routes answered by the proxy itself: requestRedirectPolicy and
// directResponsePolicy. Such a route has no services (Contour makes
// services optional then), and what only applies to proxying is refused
// on it rather than ignored.

// redirectHostname is the API's pattern of a redirect's hostname.
var redirectHostname = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// redirectCodes are the statuses a redirect may have (the API's enum,
// each one Envoy has).
var redirectCodes = []contourv1.RedirectResponseCode{301, 302, 303, 307, 308}

// maxDirectResponseBody is Envoy's default limit on a direct response's
// body: a longer one makes it reject the route configuration, which every
// virtual host of the listener shares.
const maxDirectResponseBody = 4096

// answered reports whether the route is answered by the proxy (a redirect
// or a direct response) rather than proxied.
func answered(r *contourv1.Route) bool {
	return r.RequestRedirectPolicy != nil || r.DirectResponsePolicy != nil
}

// routeAnswer validates the route's redirect or direct response and what
// comes with it; rt.Path is the route's whole path match.
func routeAnswer(rt *Route, r *contourv1.Route, errs *routeErrors) {
	if !answered(r) {
		return
	}
	// Two actions (services, a redirect, a direct response) are Contour's
	// RouteActionCountNotValid; a proxying setting beside an answer is
	// ours, RouteActionsConflict (Contour ignores it).
	type conflict struct{ reason, message string }
	var conflicts []conflict
	if r.RequestRedirectPolicy != nil && r.DirectResponsePolicy != nil {
		conflicts = append(conflicts, conflict{status.ReasonRouteActionCountNotValid, "requestRedirectPolicy and directResponsePolicy cannot both be set"})
	}
	what := "requestRedirectPolicy"
	if r.RequestRedirectPolicy == nil {
		what = "directResponsePolicy"
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"services", len(r.Services) > 0},
		{"pathRewritePolicy", r.PathRewritePolicy != nil},
		{"requestHeadersPolicy", r.RequestHeadersPolicy != nil},
		{"timeoutPolicy", r.TimeoutPolicy != nil},
		{"retryPolicy", r.RetryPolicy != nil},
		{"loadBalancerPolicy", r.LoadBalancerPolicy != nil},
		{"healthCheckPolicy", r.HealthCheckPolicy != nil},
		{"enableWebsockets", r.EnableWebsockets},
		{"internalRedirectPolicy", r.InternalRedirectPolicy != nil},
		{"cookieRewritePolicies", len(r.CookieRewritePolicies) > 0},
		// A redirect's response headers are not set (a direct
		// response's are).
		{"responseHeadersPolicy", r.ResponseHeadersPolicy != nil && r.DirectResponsePolicy == nil},
	} {
		if !f.set {
			continue
		}
		reason := status.ReasonRouteActionsConflict
		if f.name == "services" {
			reason = status.ReasonRouteActionCountNotValid
		}
		conflicts = append(conflicts, conflict{reason, fmt.Sprintf("%s cannot be set with %s: the route is answered without proxying", f.name, what)})
	}
	for _, c := range conflicts {
		errs.add(contourv1.ConditionTypeRouteError, c.reason, "%s", c.message)
	}
	if len(conflicts) > 0 {
		return
	}
	if p := r.RequestRedirectPolicy; p != nil {
		rd, err := redirectPolicy(p, rt.PathKind)
		if err != nil {
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonRequestRedirectPolicy, "requestRedirectPolicy: %v", err)
			return
		}
		rt.Redirect = rd
	}
	if p := r.DirectResponsePolicy; p != nil {
		d, err := directResponsePolicy(p)
		if err != nil {
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonDirectResponsePolicyInvalid, "directResponsePolicy: %v", err)
			return
		}
		rt.DirectResponse = d
	}
}

// redirectPolicy reads a requestRedirectPolicy: unset parts of the
// Location come from the request; the status defaults to 302 (Contour's
// default). prefix replaces the prefix the route matched (its whole path
// for an exact match), path the whole path; the query string is kept.
func redirectPolicy(p *contourv1.HTTPRequestRedirectPolicy, kind ir.PathMatchKind) (*ir.Redirect, error) {
	out := &ir.Redirect{StatusCode: 302}
	if err := redirectAuthority(p, out); err != nil {
		return nil, err
	}
	if c := p.StatusCode; c != nil {
		if !slices.Contains(redirectCodes, *c) {
			return nil, fmt.Errorf("statusCode %d must be one of 301, 302, 303, 307, 308", *c)
		}
		out.StatusCode = int(*c)
	}
	path, err := redirectPath(p, kind)
	if err != nil {
		return nil, err
	}
	out.Path = path
	return out, nil
}

// redirectAuthority reads the scheme, hostname and port of a redirect's
// Location into out.
func redirectAuthority(p *contourv1.HTTPRequestRedirectPolicy, out *ir.Redirect) error {
	if s := p.Scheme; s != nil {
		if *s != "http" && *s != "https" {
			return fmt.Errorf("scheme %q must be http or https", *s)
		}
		out.Scheme = *s
	}
	if h := p.Hostname; h != nil {
		if len(*h) > 253 || !redirectHostname.MatchString(*h) {
			return fmt.Errorf("hostname %q must be a lowercase DNS name without a wildcard or a port", *h)
		}
		out.Hostname = *h
	}
	if port := p.Port; port != nil {
		if *port < 1 || *port > 65535 {
			return fmt.Errorf("port %d must be between 1 and 65535", *port)
		}
		out.Port = uint32(*port)
	}
	return nil
}

// redirectPath reads a redirect's path or prefix; nil for neither (the
// request's path).
func redirectPath(p *contourv1.HTTPRequestRedirectPolicy, kind ir.PathMatchKind) (*ir.PathRewrite, error) {
	switch {
	case p.Path != nil && p.Prefix != nil:
		return nil, fmt.Errorf("path and prefix cannot both be set")
	case p.Path != nil:
		if err := redirectPathValid("path", *p.Path); err != nil {
			return nil, err
		}
		return &ir.PathRewrite{Value: *p.Path}, nil
	case p.Prefix != nil:
		if err := redirectPathValid("prefix", *p.Prefix); err != nil {
			return nil, err
		}
		if kind == ir.PathRegex {
			return nil, fmt.Errorf("prefix cannot replace the match of a regex path condition: use path")
		}
		return &ir.PathRewrite{Prefix: true, Value: *p.Prefix}, nil
	}
	return nil, nil
}

// redirectPathValid checks a redirect's path or prefix: it starts with /
// and has no line break or NUL byte (Envoy rejects them).
func redirectPathValid(field, v string) error {
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("%s %q must start with /", field, v)
	}
	if err := core.NoControlBytes(v); err != nil {
		return fmt.Errorf("%s %w", field, err)
	}
	return nil
}

// directResponsePolicy reads a directResponsePolicy: a status from 200 to
// 599 (the API's bounds and Envoy's) and a body of at most 4096 bytes.
func directResponsePolicy(p *contourv1.HTTPDirectResponsePolicy) (*ir.DirectResponse, error) {
	if p.StatusCode < 200 || p.StatusCode > 599 {
		return nil, fmt.Errorf("statusCode %d must be between 200 and 599", p.StatusCode)
	}
	if len(p.Body) > maxDirectResponseBody {
		return nil, fmt.Errorf("body is %d bytes, more than the %d Envoy accepts", len(p.Body), maxDirectResponseBody)
	}
	return &ir.DirectResponse{Status: uint32(p.StatusCode), Body: p.Body}, nil
}
