package translator

import (
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sync"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// httpFilter is one HTTP filter an HCM may have. A feature with an HTTP
// filter implements it in its own file and is ranked in httpFilters; the
// HCM and the routes then get it without a special case.
type httpFilter interface {
	// name is the filter's name in Envoy (its name in the HCM and its key
	// in a route's typed_per_filter_config), or the prefix of the names of
	// a filter the HCM has several instances of.
	name() string
	// needed says whether an HCM with these settings has the filter.
	needed(h hcmSettings) bool
	// httpFilters are the filter's entries in the HCM's list (only when
	// needed): one, or one per instance.
	httpFilters(h hcmSettings) []*hcmv3.HttpFilter
	// perRoute is the route's configuration of the filter, on routes of
	// an HCM that has it, and the name of the entry it configures; nil for
	// none. An *anypb.Any is the configuration packed already.
	perRoute(r *ir.Route) (string, proto.Message)
}

// httpFilters are the HTTP filters in the order Envoy runs them: an HCM's
// filter list is this list without the filters it does not need. The
// order is decided here and nowhere else.
var httpFilters = []httpFilter{
	// The IP filters (RBAC) first: a client kept out by its address is
	// answered 403 before any other filter works for it or sends its
	// request anywhere, and whatever the other filters would say.
	ipFilterFilter{},
	// CORS next, before every authorization: browsers send preflights
	// without credentials, so they must be answered before a check would
	// refuse them; and the access-control headers it adds to responses
	// then reach the denials of the filters after it (a rate limit's
	// 429, an authorization's 403), which the browser can then read.
	// After the IP filters: a client kept out is kept out of preflights
	// as well. A preflight it answers costs no upstream work.
	corsFilter{},
	// The local rate limits next: a client kept out by its address does
	// not spend the others' tokens, and every request that goes further
	// does, before any filter that calls a server works for it (an
	// authorization server is protected by the limit too).
	localRateLimitFilter{},
	// JWT verification next, before the authorizations: a request
	// without a valid token (where its route requires one) goes no
	// further, and an authorization server is only asked about requests
	// whose token is verified.
	jwtFilter{},
	// The global rate limits after JWT verification: requests with a bad
	// token do not spend the rate limit service's counts; and before the
	// authorizations, which they protect too.
	globalRateLimitFilter{},
	// ext_authz next: a request that is not authorized goes no further,
	// so no later filter spends work on it or sends its data anywhere.
	extAuthzFilter{},
	// The authorizations routes name themselves (routefilters.go): a
	// route is authorized by one of these or by the HCM's, never both
	// (the HCM's is disabled on it), so their order between them does not
	// matter; they too go first, for the reason above.
	routeExtAuthzFilter{},
	// ext_proc after ext_authz, so that a processor only sees authorized
	// requests; before the router, since it may change the headers the
	// router decides on.
	extProcFilter{},
	// The processors routes name themselves, beside the HCM's for the
	// same reason.
	routeExtProcFilter{},
	// The cookie rewrites (Lua) next to the router: they change the
	// upstream's response before any other filter sees it.
	cookieFilter{},
	// The router last: it is the terminal filter that forwards the
	// request, and Envoy requires it at the end.
	routerFilter{},
}

// hcmSettings are what decide the HTTP filters of one HCM: the
// authorization and the processor that apply to it (nil for none), and
// those its routes name themselves (withRoutes).
type hcmSettings struct {
	auth      *ir.ExtAuth
	proc      *ir.ExtProc
	routeAuth []named[*ir.ExtAuth]
	routeProc []named[*ir.ExtProc]
	// cookies: some of the routes rewrite cookies (withRoutes).
	cookies bool
	// ipFilters: some of the routes filter clients by address
	// (withRoutes).
	ipFilters bool
	// cors: some of the hosts have a CORS policy (withRoutes).
	cors bool
	// rateLimits: some of the hosts or routes have a local rate limit
	// (withRoutes).
	rateLimits bool
	// jwt are the JWT providers of a TLS host's own HCM.
	jwt []ir.JWTProvider
	// rateLimitService is the global rate limit service, when some of
	// the hosts or routes send it descriptors (withRoutes).
	rateLimitService *ir.RateLimitService
	// xfcc are the client certificate's parts a TLS host's own HCM
	// forwards (x-forwarded-client-cert); nil for none.
	xfcc *ir.ForwardClientCert
	// everyHCM are the model's settings every HCM has.
	everyHCM
	// keepHostPort: the Host header reaches the upstream with its port
	// (Gateway API listeners of their own port; their route configuration
	// ignores the port when matching hosts instead).
	keepHostPort bool
}

// globalHCM are the settings of the HCMs shared by hosts (the HTTP
// listener's, the fallback chain's): the global filters.
func globalHCM(m *ir.Model) hcmSettings {
	return hcmSettings{auth: m.GlobalAuth, proc: m.GlobalExtProc, everyHCM: modelHCM(m)}
}

// everyHCM are the settings every HCM has, the model's: its tracing
// (tracing.go) and access log (accesslog.go).
type everyHCM struct {
	tracing   *ir.Tracing
	accessLog *ir.AccessLog
}

func modelHCM(m *ir.Model) everyHCM { return everyHCM{tracing: m.Tracing, accessLog: m.AccessLog} }

// hostHCM are the settings of a TLS virtual host's own HCM, which only
// its own routes use, with the model's settings of every HCM.
func hostHCM(vh *ir.SecureVirtualHost, every everyHCM) hcmSettings {
	h := hcmSettings{auth: vh.Auth, proc: vh.ExtProc, jwt: vh.JWTProviders, everyHCM: every}.withRoutes(append([]*ir.VirtualHost{&vh.VirtualHost}, vh.Also...))
	if vh.ClientValidation != nil {
		h.xfcc = vh.ClientValidation.ForwardClientCert
	}
	return h
}

// filterSet holds the filters of an HCM, bit i for httpFilters[i]: a
// comparable value, so that cached routes can be matched to an HCM.
type filterSet uint64

// filters returns the set of filters an HCM with these settings has.
func (h hcmSettings) filters() filterSet {
	var s filterSet
	for i, f := range httpFilters {
		if f.needed(h) {
			s |= 1 << i
		}
	}
	return s
}

func (s filterSet) has(i int) bool { return s&(1<<i) != 0 }

// hcmHTTPFilters is the HCM's filter list, in the order of httpFilters.
func hcmHTTPFilters(h hcmSettings) []*hcmv3.HttpFilter {
	var out []*hcmv3.HttpFilter
	for _, f := range httpFilters {
		if f.needed(h) {
			out = append(out, f.httpFilters(h)...)
		}
	}
	return out
}

// perFilterConfig is a route's typed_per_filter_config for the filters of
// its HCM; nil when none of them configures the route. A route whose one
// entry is the shared ext_authz "disabled" or "check" (nearly every route
// of an HCM with authorization) gets a map shared by all such routes,
// never modified, rather than a map of its own (~4% of a TLS build's
// bytes).
func perFilterConfig(r *ir.Route, s filterSet) map[string]*anypb.Any {
	type entry struct {
		name string
		a    *anypb.Any
	}
	var buf [8]entry
	entries := buf[:0]
	for i, f := range httpFilters {
		if !s.has(i) {
			continue
		}
		if name, c := f.perRoute(r); c != nil {
			a, packed := c.(*anypb.Any)
			if !packed {
				a = mustAny(c)
			}
			entries = append(entries, entry{name, a})
		}
	}
	switch len(entries) {
	case 0:
		return nil
	case 1:
		if m := onlyExtAuthz()[entries[0].a]; m != nil && entries[0].name == ExtAuthzFilterName {
			return m
		}
	}
	out := make(map[string]*anypb.Any, len(entries))
	for _, e := range entries {
		out[e.name] = e.a
	}
	return out
}

// onlyExtAuthz are the shared maps of perFilterConfig, by their one
// value.
var onlyExtAuthz = sync.OnceValue(func() map[*anypb.Any]map[string]*anypb.Any {
	out := map[*anypb.Any]map[string]*anypb.Any{}
	for _, a := range []*anypb.Any{packedExtAuthzDisabled(), packedExtAuthzCheck()} {
		out[a] = map[string]*anypb.Any{ExtAuthzFilterName: a}
	}
	return out
})

// hostFilter is an httpFilter configured on virtual hosts rather than
// (or as well as) on routes.
type hostFilter interface {
	// perHost is the virtual host's configuration of the filter, on hosts
	// of an HCM that has it, and the name of the entry it configures; nil
	// for none.
	perHost(vh *ir.VirtualHost) (string, proto.Message)
}

// hostFilterConfig is a virtual host's typed_per_filter_config for the
// filters of its HCM; nil when none of them configures the host.
func hostFilterConfig(vh *ir.VirtualHost, s filterSet) map[string]*anypb.Any {
	var out map[string]*anypb.Any
	for i, f := range httpFilters {
		hf, ok := f.(hostFilter)
		if !ok || !s.has(i) {
			continue
		}
		if name, c := hf.perHost(vh); c != nil {
			if out == nil {
				out = map[string]*anypb.Any{}
			}
			out[name] = mustAny(c)
		}
	}
	return out
}

// typedHTTPFilter is an HCM filter with its typed configuration.
func typedHTTPFilter(name string, cfg proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(cfg)}}
}

// oneFilter is the HCM list entry of a filter that has one.
func oneFilter(name string, cfg proto.Message) []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{typedHTTPFilter(name, cfg)}
}
