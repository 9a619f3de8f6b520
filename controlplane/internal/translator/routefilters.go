package translator

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// A route may name its own authorization or processor (ir.Route.Auth,
// ir.Route.Processor) instead of its HCM's. Envoy's HCM has one filter
// list for all its routes, so the HCM gets one more ext_authz (ext_proc)
// filter per distinct configuration its routes name, disabled by default
// (HttpFilter.disabled) and enabled only on the routes that name it
// (typed_per_filter_config: a FilterConfig with disabled false); on those
// routes the HCM's own filter is disabled (extauthz.go, extproc.go).
//
// An instance's name is the filter's, its cluster and a hash of its Envoy
// configuration: the same configuration has the same name in every HCM
// and every translation, so that a route's translation depends on the
// route alone (Cache reuses it), and two configurations of one cluster do
// not collide.

// named is one filter instance: its name and its configuration.
type named[T any] struct {
	name string
	cfg  T
}

// routeExtAuthzFilter is the ext_authz filters of the authorizations an
// HCM's routes name.
type routeExtAuthzFilter struct{}

func (routeExtAuthzFilter) name() string { return ExtAuthzFilterName + "/" }

func (routeExtAuthzFilter) needed(h hcmSettings) bool { return len(h.routeAuth) > 0 }

func (routeExtAuthzFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	out := make([]*hcmv3.HttpFilter, len(h.routeAuth))
	for i, a := range h.routeAuth {
		out[i] = disabledByDefault(typedHTTPFilter(a.name, extAuthz(a.cfg)))
	}
	return out
}

// perRoute enables the route's authorization, with the route's context.
func (routeExtAuthzFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.Auth == nil {
		return "", nil
	}
	return routeAuthName(r.Auth), &routev3.FilterConfig{Config: mustAny(extAuthzCheck(r))}
}

// routeExtProcFilter is the ext_proc filters of the processors an HCM's
// routes name.
type routeExtProcFilter struct{}

func (routeExtProcFilter) name() string { return ExtProcFilterName + "/" }

func (routeExtProcFilter) needed(h hcmSettings) bool { return len(h.routeProc) > 0 }

func (routeExtProcFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	out := make([]*hcmv3.HttpFilter, len(h.routeProc))
	for i, p := range h.routeProc {
		out[i] = disabledByDefault(typedHTTPFilter(p.name, routeExtProc(p.cfg)))
	}
	return out
}

// routeExtProc is the configuration of a processor routes name: it may
// not route the request again (its clear_route_cache is ignored). It runs
// after every authorization, and the other routes of its HCM (other
// hosts' on a shared listener, other namespaces' routes on a host they
// share) have authorizations of their own, which a request moved onto
// them would skip (docs/design/security.md).
func routeExtProc(p *ir.ExtProc) *extprocv3.ExternalProcessor {
	cfg := extProc(p)
	cfg.RouteCacheAction = extprocv3.ExternalProcessor_RETAIN
	return cfg
}

// perRoute enables the route's processor as it is: an empty config in a
// FilterConfig is Envoy's "enabled, nothing overridden".
func (routeExtProcFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.Processor == nil {
		return "", nil
	}
	return routeProcName(r.Processor), &routev3.FilterConfig{Config: &anypb.Any{}}
}

func disabledByDefault(f *hcmv3.HttpFilter) *hcmv3.HttpFilter {
	f.Disabled = true
	return f
}

func routeAuthName(a *ir.ExtAuth) string {
	return instanceName(ExtAuthzFilterName, a.Cluster, extAuthz(a))
}

func routeProcName(p *ir.ExtProc) string {
	return instanceName(ExtProcFilterName, p.Cluster, routeExtProc(p))
}

// instanceName is filter/cluster/hash, the hash of the deterministic
// encoding of the instance's configuration (Origins are not part of it:
// the same configuration from two policies is one filter).
func instanceName(filter, cluster string, cfg proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(cfg)
	if err != nil {
		// Only an invalid message fails, a programming error (as mustAny).
		panic(err)
	}
	sum := sha256.Sum256(b)
	return filter + "/" + cluster + "/" + hex.EncodeToString(sum[:4])
}

// withRoutes adds to h the authorizations and processors the routes of
// hosts name, each once, sorted by name, and the filters the hosts and
// their routes need: hosts are all the hosts whose routes the HCM serves.
func (h hcmSettings) withRoutes(hosts []*ir.VirtualHost) hcmSettings {
	var auths instances[*ir.ExtAuth]
	var procs instances[*ir.ExtProc]
	for _, vh := range hosts {
		for _, r := range vh.Routes {
			if r.Auth != nil {
				auths.add(r.Auth, routeAuthName)
			}
			if r.Processor != nil {
				procs.add(r.Processor, routeProcName)
			}
		}
	}
	h.routeAuth, h.routeProc = auths.sorted(), procs.sorted()
	h.cookies = routesRewriteCookies(hosts)
	h.ipFilters = routesFilterIPs(hosts)
	h.cors = hostsHaveCORS(hosts)
	h.rateLimits = hostsRateLimit(hosts)
	h.rateLimitService = globalRateLimitService(hosts)
	return h
}

// instances collects the distinct instances routes name: by pointer
// first, without hashing again (the routes of one policy share its
// configuration), then by name. The maps are made for the first one:
// most HCMs have none.
type instances[T comparable] struct {
	seen  map[T]bool
	names map[string]bool
	list  []named[T]
}

func (s *instances[T]) add(cfg T, name func(T) string) {
	if s.seen[cfg] {
		return
	}
	if s.seen == nil {
		s.seen, s.names = map[T]bool{}, map[string]bool{}
	}
	s.seen[cfg] = true
	if n := name(cfg); !s.names[n] {
		s.names[n] = true
		s.list = append(s.list, named[T]{name: n, cfg: cfg})
	}
}

func (s *instances[T]) sorted() []named[T] {
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].name < s.list[j].name })
	return s.list
}

// routeFilterOrigins are o and the origins of the authorizations and
// processors the routes of vh name: the objects behind its HCM's extra
// filters.
func routeFilterOrigins(vh *ir.VirtualHost, o ir.Origins) ir.Origins {
	for _, r := range vh.Routes {
		if r.Auth != nil {
			o = o.Union(r.Auth.Origins)
		}
		if r.Processor != nil {
			o = o.Union(r.Processor.Origins)
		}
	}
	return o
}
