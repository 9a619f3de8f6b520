package guard

import (
	"maps"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// protectingTypes are the HTTP filter configurations that protect
// upstreams, by message name (the type URL's last part).
var protectingTypes = map[string]bool{
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz":             true,
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor":     true,
	"envoy.extensions.filters.http.rbac.v3.RBAC":                      true,
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication":    true,
	"envoy.extensions.filters.http.ratelimit.v3.RateLimit":            true,
	"envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit": true,
	"envoy.extensions.filters.http.cors.v3.Cors":                      true,
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth":           true,
	"envoy.extensions.filters.http.oauth2.v3.OAuth2":                  true,
}

func messageName(a *anypb.Any) string {
	u := a.GetTypeUrl()
	return u[strings.LastIndex(u, "/")+1:]
}

// Filters are the protecting HTTP filters of a configuration's connection
// managers, by name: whether the filter is off by default (HttpFilter's
// disabled, enabled route by route).
type Filters map[string]bool

// ProtectingFilters are the protecting filters of the connection managers
// of hcms.
func ProtectingFilters(hcms ...*hcmv3.HttpConnectionManager) Filters {
	out := Filters{}
	for _, h := range hcms {
		for _, f := range h.GetHttpFilters() {
			if protectingTypes[messageName(f.GetTypedConfig())] {
				out[f.GetName()] = out[f.GetName()] || f.GetDisabled()
			}
		}
	}
	return out
}

// Add adds the protecting filters of hcms to fs.
func (fs Filters) Add(hcms ...*hcmv3.HttpConnectionManager) {
	for n, off := range ProtectingFilters(hcms...) {
		fs[n] = fs[n] || off
	}
}

// setting is the effective per-route setting of one protecting filter:
// off, the filter's own ("" : inherit), or a configuration's encoding.
type setting string

const (
	off     setting = "\x00off"
	inherit setting = ""
)

// vector is a route's settings, by protecting filter.
type vector map[string]setting

// atLeast reports whether v protects at least as much as w: per filter,
// the same setting, or w's was off. It returns the first filter where not.
func (v vector) atLeast(w vector) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(w)) {
		if ws := w[name]; ws != off && v[name] != ws {
			return name, false
		}
	}
	return "", true
}

// within reports whether v's setting of each filter is one of allowed's,
// or one of those is off. It returns the first filter where not.
func (v vector) within(allowed map[string][]setting) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(allowed)) {
		if ss := allowed[name]; !slices.Contains(ss, off) && !slices.Contains(ss, v[name]) {
			return name, false
		}
	}
	return "", true
}

// routeVector is the settings of route r of virtual host vh of route
// configuration rc, for the filters fs: the most specific
// typed_per_filter_config entry wins, as in Envoy.
func routeVector(fs Filters, rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, r *routev3.Route) vector {
	v := make(vector, len(fs))
	for name, offByDefault := range fs {
		a := r.GetTypedPerFilterConfig()[name]
		if a == nil {
			a = vh.GetTypedPerFilterConfig()[name]
		}
		if a == nil {
			a = rc.GetTypedPerFilterConfig()[name]
		}
		switch {
		case a != nil:
			v[name] = settingOf(a)
		case offByDefault:
			v[name] = off
		default:
			v[name] = inherit
		}
	}
	return v
}

// settingOf is the setting a typed_per_filter_config entry makes.
func settingOf(a *anypb.Any) setting {
	m, err := a.UnmarshalNew()
	if err != nil {
		return encoding(a) // unknown: only the same bytes are the same
	}
	switch c := m.(type) {
	case *routev3.FilterConfig:
		if c.GetDisabled() {
			return off
		}
		if c.GetConfig() != nil && c.GetConfig().GetTypeUrl() != "" {
			return settingOf(c.GetConfig())
		}
	case *extauthzv3.ExtAuthzPerRoute:
		if c.GetDisabled() {
			return off
		}
	case *extprocv3.ExtProcPerRoute:
		if c.GetDisabled() {
			return off
		}
	case *jwtv3.PerRouteConfig:
		if c.GetDisabled() {
			return off
		}
	case *rbacv3.RBACPerRoute:
		if c.GetRbac() == nil {
			return off
		}
	}
	return encoding(a)
}

func encoding(m proto.Message) setting {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return setting("\x00unencodable")
	}
	return setting(b)
}
