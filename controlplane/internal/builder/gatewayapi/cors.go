package gatewayapi

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// corsOriginRE is the API's pattern of an allowed origin other than "*":
// http or https, a host name whose leftmost label may be "*" (or "*"
// alone), an optional port. Checked here too: objects read from files
// did not go through the API server, and a wildcard becomes a regular
// expression.
var corsOriginRE = regexp.MustCompile(`^(https?)://((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?$`)

// corsDefaultMaxAge is the API's maxAge when unset, in seconds.
const corsDefaultMaxAge = 5

// corsWildcard in allowMethods or allowHeaders allows any: Envoy then
// answers with the method or headers the preflight asks for, never "*",
// as the API requires with credentials.
const corsWildcard = "*"

// cors reads a CORS filter into the rule's own policy.
func cors(f *gwapiv1.HTTPCORSFilter) (*ir.CORSPolicy, error) {
	if f == nil {
		return nil, errFilterConfig
	}
	// The API has the gateway answer the preflights of origins it does
	// not allow: the backend never sees them.
	p := &ir.CORSPolicy{AllowCredentials: core.PtrValue(f.AllowCredentials), AnswerUnmatchedPreflights: true}
	for i, o := range f.AllowOrigins {
		origin, err := corsOrigin(string(o))
		if err != nil {
			return nil, fmt.Errorf("allowOrigins[%d]: %w", i, err)
		}
		p.AllowOrigins = append(p.AllowOrigins, origin)
	}
	for i, m := range f.AllowMethods {
		if m != corsWildcard && !slices.Contains(httpMethods, gwapiv1.HTTPMethod(m)) {
			return nil, fmt.Errorf("allowMethods[%d]: %q is not one of %v or %q", i, m, httpMethods, corsWildcard)
		}
		p.AllowMethods = append(p.AllowMethods, string(m))
	}
	var err error
	if p.AllowHeaders, err = corsHeaders("allowHeaders", f.AllowHeaders); err != nil {
		return nil, err
	}
	if p.ExposeHeaders, err = corsHeaders("exposeHeaders", f.ExposeHeaders); err != nil {
		return nil, err
	}
	if len(p.AllowMethods) > 1 && slices.Contains(p.AllowMethods, corsWildcard) || len(p.AllowHeaders) > 1 && slices.Contains(p.AllowHeaders, corsWildcard) {
		return nil, fmt.Errorf("%q must be alone in allowMethods and allowHeaders", corsWildcard)
	}
	age := f.MaxAge
	switch {
	case age < 0:
		return nil, fmt.Errorf("maxAge %d is negative", age)
	case age == 0:
		age = corsDefaultMaxAge
	}
	d := time.Duration(age) * time.Second
	p.MaxAge = &d
	return p, nil
}

// corsOrigin is an allowed origin: "*" (any), an origin (compared
// ignoring case), or one with a wildcard host, as a regular expression
// whose "*" is one or more DNS labels, lower case as browsers send them.
func corsOrigin(o string) (ir.CORSOrigin, error) {
	if o == "*" {
		return ir.CORSOrigin{Value: o}, nil
	}
	m := corsOriginRE.FindStringSubmatch(o)
	if m == nil {
		return ir.CORSOrigin{}, fmt.Errorf("%q is not \"*\" or an origin, http(s)://host[:port] (the host may start with \"*.\")", o)
	}
	if port := m[6]; port != "" {
		if n, _ := strconv.Atoi(port); n < 1 || n > 65535 {
			return ir.CORSOrigin{}, fmt.Errorf("%q: port %s is not a port", o, port)
		}
	}
	if !strings.Contains(o, "*") {
		return ir.CORSOrigin{Value: o}, nil
	}
	rest := strings.ToLower(strings.TrimPrefix(o, m[1]+"://*"))
	re := regexp.QuoteMeta(m[1]+"://") + `[a-z0-9.-]+` + regexp.QuoteMeta(rest)
	// A long host makes a program Envoy refuses (and the listener with it).
	if err := core.RegexValid(re); err != nil {
		return ir.CORSOrigin{}, fmt.Errorf("%q: %w", o, err)
	}
	return ir.CORSOrigin{Value: re, Regex: true}, nil
}

// corsHeaders checks header names ("*" allows any).
func corsHeaders(field string, hs []gwapiv1.HTTPHeaderName) ([]string, error) {
	var out []string
	for i, h := range hs {
		if h != corsWildcard {
			if msgs := validation.IsHTTPHeaderName(string(h)); len(msgs) > 0 {
				return nil, fmt.Errorf("%s[%d]: %q: %s", field, i, h, strings.Join(msgs, "; "))
			}
		}
		out = append(out, string(h))
	}
	return out, nil
}
