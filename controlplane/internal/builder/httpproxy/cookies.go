package httpproxy

import (
	"fmt"
	"regexp"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// The API's patterns of cookie names, paths and domains (enforced here
// too: files are not checked by an API server, and the values end up in
// the Lua code of the rewrite).
var (
	cookieNameRE   = regexp.MustCompile(`^[^()<>@,;:\\"/\[\]?={} \t\x7f\x00-\x1f]+$`)
	cookiePathRE   = regexp.MustCompile(`^[^;\x7f\x00-\x1f]+$`)
	cookieDomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// cookieRewrites validates a list of cookieRewritePolicies: unique names,
// each rewriting something, values the API allows.
func cookieRewrites(ps []contourv1.CookieRewritePolicy) ([]ir.CookieRewrite, error) {
	var out []ir.CookieRewrite
	seen := map[string]bool{}
	for i, p := range ps {
		if !cookieNameRE.MatchString(p.Name) || len(p.Name) > 4096 {
			return nil, fmt.Errorf("[%d]: %q is not a cookie name", i, p.Name)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("[%d]: cookie %q is rewritten twice: names must be unique", i, p.Name)
		}
		seen[p.Name] = true
		c, err := cookieRewrite(p)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// cookieRewrite validates what one cookieRewritePolicy rewrites (its name
// is checked by the caller): values the API allows, at least one of them.
func cookieRewrite(p contourv1.CookieRewritePolicy) (ir.CookieRewrite, error) {
	c := ir.CookieRewrite{Name: p.Name, Secure: p.Secure}
	if r := p.PathRewrite; r != nil {
		if !cookiePathRE.MatchString(r.Value) || len(r.Value) > 4096 {
			return c, fmt.Errorf("pathRewrite %q is not a cookie path", r.Value)
		}
		c.Path = r.Value
	}
	if r := p.DomainRewrite; r != nil {
		if !cookieDomainRE.MatchString(r.Value) || len(r.Value) > 4096 {
			return c, fmt.Errorf("domainRewrite %q is not a lower-case domain", r.Value)
		}
		c.Domain = r.Value
	}
	if s := p.SameSite; s != nil {
		switch *s {
		case "Strict", "Lax", "None":
			c.SameSite = *s
		default:
			return c, fmt.Errorf("sameSite %q is not one of Strict, Lax and None", *s)
		}
	}
	if c.Path == "" && c.Domain == "" && c.Secure == nil && c.SameSite == "" {
		return c, fmt.Errorf("cookie %q: set at least one of pathRewrite, domainRewrite, secure and sameSite", p.Name)
	}
	return c, nil
}

// mergeCookieRewrites is a service's rewrites over its route's: for a
// cookie both rewrite, each attribute the service sets is its; nil when
// the service has none (the route's apply).
func mergeCookieRewrites(route, service []ir.CookieRewrite) []ir.CookieRewrite {
	if len(service) == 0 {
		return nil
	}
	out := append([]ir.CookieRewrite(nil), route...)
	for _, s := range service {
		i := 0
		for i < len(out) && out[i].Name != s.Name {
			i++
		}
		if i == len(out) {
			out = append(out, s)
			continue
		}
		m := &out[i]
		if s.Path != "" {
			m.Path = s.Path
		}
		if s.Domain != "" {
			m.Domain = s.Domain
		}
		if s.Secure != nil {
			m.Secure = s.Secure
		}
		if s.SameSite != "" {
			m.SameSite = s.SameSite
		}
	}
	return out
}

// routeCookieRewrites validates a route's cookieRewritePolicies and merges
// them into those of its clusters that have their own.
func routeCookieRewrites(rt *Route, ps []contourv1.CookieRewritePolicy, errs *routeErrors) {
	var err error
	if rt.CookieRewrites, err = cookieRewrites(ps); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonCookieRewritePoliciesInvalid, "CookieRewritePolicies%v", err)
	}
	for i := range rt.Clusters {
		rt.Clusters[i].CookieRewrites = mergeCookieRewrites(rt.CookieRewrites, rt.Clusters[i].CookieRewrites)
	}
}
