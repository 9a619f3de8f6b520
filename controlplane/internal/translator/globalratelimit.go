package translator

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ratelimitconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/ratelimit/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// RateLimitFilterName is Envoy's global rate limit filter.
const RateLimitFilterName = "envoy.filters.http.ratelimit"

// globalRateLimitFilter is the ratelimit filter of an HCM some of whose
// hosts or routes send descriptors to the global rate limit service. The
// descriptors are the routes' rate_limits and the virtual hosts' (Envoy
// sends a host's for its routes without their own); a route that
// disables them ignores its host's (typed_per_filter_config).
type globalRateLimitFilter struct{}

func (globalRateLimitFilter) name() string { return RateLimitFilterName }

func (globalRateLimitFilter) needed(h hcmSettings) bool { return h.rateLimitService != nil }

func (globalRateLimitFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	s := h.rateLimitService
	cfg := &ratelimitv3.RateLimit{
		Domain:                         s.Domain,
		Timeout:                        durationpb.New(s.Timeout),
		FailureModeDeny:                !s.FailOpen,
		RateLimitedAsResourceExhausted: s.ResourceExhausted,
		RateLimitService: &ratelimitconfigv3.RateLimitServiceConfig{
			GrpcService:         rateLimitService(s.Cluster, s.Authority, s.Timeout),
			TransportApiVersion: corev3.ApiVersion_V3,
		},
	}
	if s.XRateLimitHeaders {
		cfg.EnableXRatelimitHeaders = ratelimitv3.RateLimit_DRAFT_VERSION_03
	}
	return oneFilter(RateLimitFilterName, cfg)
}

func (globalRateLimitFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if g := r.GlobalRateLimits; g != nil && g.Disabled {
		return RateLimitFilterName, &ratelimitv3.RateLimitPerRoute{VhRateLimits: ratelimitv3.RateLimitPerRoute_IGNORE}
	}
	return "", nil
}

// rateLimits are descriptors as Envoy's rate limit actions.
func rateLimits(ds []ir.RateLimitDescriptor) []*routev3.RateLimit {
	out := make([]*routev3.RateLimit, len(ds))
	for i, d := range ds {
		rl := &routev3.RateLimit{}
		for _, e := range d.Entries {
			rl.Actions = append(rl.Actions, rateLimitAction(e))
		}
		out[i] = rl
	}
	return out
}

func rateLimitAction(e ir.RateLimitEntry) *routev3.RateLimit_Action {
	switch {
	case e.GenericKey != nil:
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_GenericKey_{GenericKey: &routev3.RateLimit_Action_GenericKey{
			DescriptorKey: e.GenericKey.Key, DescriptorValue: e.GenericKey.Value,
		}}}
	case e.RequestHeader != nil:
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{
			HeaderName: e.RequestHeader.Header, DescriptorKey: e.RequestHeader.Key,
		}}}
	case e.HeaderMatch != nil:
		m := &routev3.RateLimit_Action_HeaderValueMatch{DescriptorValue: e.HeaderMatch.Value, ExpectMatch: wrapperspb.Bool(e.HeaderMatch.ExpectMatch)}
		for _, h := range e.HeaderMatch.Headers {
			m.Headers = append(m.Headers, headerMatcher(h))
		}
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_HeaderValueMatch_{HeaderValueMatch: m}}
	case e.RemoteAddress:
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}}}
	}
	// The builder sets exactly one kind: an entry of another kind must not
	// quietly become some other descriptor (a programming error, as
	// mustAny's).
	panic(fmt.Sprintf("translator: a rate limit entry of no known kind: %+v", e))
}

// globalRateLimitService is the service the hosts or routes send
// descriptors to (one for the whole model); nil for none.
func globalRateLimitService(hosts []*ir.VirtualHost) *ir.RateLimitService {
	for _, vh := range hosts {
		if g := vh.GlobalRateLimits; g != nil && g.Service != nil {
			return g.Service
		}
		for _, r := range vh.Routes {
			if g := r.GlobalRateLimits; g != nil && g.Service != nil {
				return g.Service
			}
		}
	}
	return nil
}

// hostRateLimits are a virtual host's descriptors, sent for its routes
// without their own.
func hostRateLimits(vh *ir.VirtualHost) []*routev3.RateLimit {
	if g := vh.GlobalRateLimits; g != nil && !g.Disabled {
		return rateLimits(g.Descriptors)
	}
	return nil
}
