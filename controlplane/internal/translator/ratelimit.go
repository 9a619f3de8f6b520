package translator

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// LocalRateLimitFilterName is Envoy's local rate limit filter.
const LocalRateLimitFilterName = "envoy.filters.http.local_ratelimit"

// localRateLimitFilter is the local rate limit filter of an HCM some of
// whose hosts or routes have a limit: without a bucket and disabled, it
// runs only where a virtual host or a route configures it
// (typed_per_filter_config). Envoy keeps one bucket per configuration: a
// host's is shared by its routes without their own, and a route's is its
// own.
type localRateLimitFilter struct{}

func (localRateLimitFilter) name() string { return LocalRateLimitFilterName }

func (localRateLimitFilter) needed(h hcmSettings) bool { return h.rateLimits }

func (localRateLimitFilter) httpFilters(hcmSettings) []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{disabledByDefault(typedHTTPFilter(LocalRateLimitFilterName, &localratelimitv3.LocalRateLimit{StatPrefix: "http"}))}
}

func (localRateLimitFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.RateLimit == nil {
		return "", nil
	}
	return LocalRateLimitFilterName, localRateLimit(r.RateLimit, "route")
}

// perHost names the statistics after the host, which also keeps two
// hosts with the same limit from being merged into one virtual host (and
// one bucket).
func (localRateLimitFilter) perHost(vh *ir.VirtualHost) (string, proto.Message) {
	if vh.RateLimit == nil {
		return "", nil
	}
	return LocalRateLimitFilterName, localRateLimit(vh.RateLimit, "vhost."+vh.FQDN)
}

// localRateLimit is a bucket, enforced on every request (Envoy's filter
// does nothing without filter_enabled and filter_enforced).
func localRateLimit(l *ir.LocalRateLimit, statPrefix string) *localratelimitv3.LocalRateLimit {
	out := &localratelimitv3.LocalRateLimit{
		StatPrefix: statPrefix,
		TokenBucket: &typev3.TokenBucket{
			MaxTokens:     l.Requests + l.Burst,
			TokensPerFill: wrapperspb.UInt32(l.Requests),
			FillInterval:  durationpb.New(l.Interval),
		},
		FilterEnabled:        allRequests("local_rate_limit_enabled"),
		FilterEnforced:       allRequests("local_rate_limit_enforced"),
		ResponseHeadersToAdd: headerValues(l.ResponseHeaders, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
	}
	if l.Status != 0 {
		out.Status = &typev3.HttpStatus{Code: statusCode(l.Status)}
	}
	return out
}

// statusCode is an HTTP status as Envoy's enum. The builder admits only
// the statuses of the enum (400 to 511, envoyErrorStatuses): a larger one
// is its bug, not to be wrapped around into another status.
func statusCode(status uint32) typev3.StatusCode {
	if status > 599 {
		panic(fmt.Sprintf("translator: %d is not an HTTP status", status))
	}
	return typev3.StatusCode(status)
}

// allRequests is 100% of the requests, unless the runtime key says
// otherwise (as Contour's).
func allRequests(runtimeKey string) *corev3.RuntimeFractionalPercent {
	return &corev3.RuntimeFractionalPercent{
		DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED},
		RuntimeKey:   runtimeKey,
	}
}

// hostsRateLimit says whether one of hosts, or one of their routes, has a
// local rate limit.
func hostsRateLimit(hosts []*ir.VirtualHost) bool {
	for _, vh := range hosts {
		if vh.RateLimit != nil || routesRateLimit(vh) {
			return true
		}
	}
	return false
}

// routesRateLimit says whether one of vh's routes has a local rate limit
// (a bucket of the route's own).
func routesRateLimit(vh *ir.VirtualHost) bool {
	for _, r := range vh.Routes {
		if r.RateLimit != nil {
			return true
		}
	}
	return false
}
