package httpproxy

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// corsHeaderValueRE is the API's pattern of a method or header name in a
// CORS policy (an HTTP token), checked here too: files are not checked by
// an API server, and the values end up in response headers.
var corsHeaderValueRE = regexp.MustCompile("^[a-zA-Z0-9!#$%&'*+.^_`|~-]+$")

// The parts of an origin: a URL scheme, a host name or IPv4 address, and
// an optional port.
var (
	originSchemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*$`)
	originHostRE   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$`)
	originPortRE   = regexp.MustCompile(`^[0-9]{0,5}$`)
)

// hostCORS validates the virtual host's corsPolicy. An invalid one is an
// error on the root (not served), as in Contour.
func hostCORS(vh *contourv1.VirtualHost, st *status.Object) *ir.CORSPolicy {
	if vh.CORSPolicy == nil {
		return nil
	}
	p, err := corsPolicy(vh.CORSPolicy)
	if err != nil {
		st.AddError(contourv1.ConditionTypeCORSError, status.ReasonPolicyDidNotParse, "Spec.VirtualHost.CORSPolicy: "+err.Error())
		return nil
	}
	return p
}

// corsPolicy validates a CORS policy, with Contour's reading of
// allowOrigin: "*" is any origin, a "scheme://host[:port]" is that origin
// (compared ignoring case, as Envoy does), anything else a regular
// expression.
func corsPolicy(in *contourv1.CORSPolicy) (*ir.CORSPolicy, error) {
	p := &ir.CORSPolicy{AllowCredentials: in.AllowCredentials, AllowPrivateNetwork: in.AllowPrivateNetwork}
	if len(in.AllowOrigin) == 0 {
		return nil, fmt.Errorf("allowOrigin must list at least one origin")
	}
	for i, o := range in.AllowOrigin {
		origin, err := corsOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allowOrigin[%d]: %v", i, err)
		}
		p.AllowOrigins = append(p.AllowOrigins, origin)
	}
	if len(in.AllowMethods) == 0 {
		return nil, fmt.Errorf("allowMethods must list at least one method")
	}
	var err error
	if p.AllowMethods, err = corsHeaderValues("allowMethods", in.AllowMethods); err != nil {
		return nil, err
	}
	if p.AllowHeaders, err = corsHeaderValues("allowHeaders", in.AllowHeaders); err != nil {
		return nil, err
	}
	if p.ExposeHeaders, err = corsHeaderValues("exposeHeaders", in.ExposeHeaders); err != nil {
		return nil, err
	}
	if p.MaxAge, err = corsMaxAge(in.MaxAge); err != nil {
		return nil, err
	}
	return p, nil
}

func corsOrigin(o string) (ir.CORSOrigin, error) {
	switch {
	case o == "*":
		return ir.CORSOrigin{Value: o}, nil
	case isOrigin(o):
		return ir.CORSOrigin{Value: o}, nil
	case o == "":
		return ir.CORSOrigin{}, fmt.Errorf("an origin cannot be empty")
	}
	if err := core.RegexValid(o); err != nil {
		return ir.CORSOrigin{}, fmt.Errorf("%q is not \"*\", an origin (scheme://host[:port]) or a valid regular expression: %v", o, err)
	}
	return ir.CORSOrigin{Value: o, Regex: true}, nil
}

// isOrigin: o is an origin as browsers send it, scheme://host[:port],
// nothing else.
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return false
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		_, err := netip.ParseAddr(host)
		return originSchemeRE.MatchString(u.Scheme) && err == nil
	}
	return originSchemeRE.MatchString(u.Scheme) && originHostRE.MatchString(host) && originPortRE.MatchString(u.Port())
}

func corsHeaderValues(field string, vs []contourv1.CORSHeaderValue) ([]string, error) {
	var out []string
	for i, v := range vs {
		if !corsHeaderValueRE.MatchString(string(v)) {
			return nil, fmt.Errorf("%s[%d]: %q is not a method or header name", field, i, v)
		}
		out = append(out, string(v))
	}
	return out, nil
}

// corsMaxAge reads maxAge, a Go duration ("0" disables caching), as whole
// seconds (rounded, as Contour does); nil when empty.
func corsMaxAge(s string) (*time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("maxAge %q is not a duration of 0 or more", s)
	}
	d = time.Duration(math.Round(d.Seconds())) * time.Second
	return &d, nil
}
