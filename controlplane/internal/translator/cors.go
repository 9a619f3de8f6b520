package translator

import (
	"strconv"
	"strings"

	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// CORSFilterName is Envoy's CORS filter.
const CORSFilterName = "envoy.filters.http.cors"

// corsFilter is the CORS filter of an HCM some of whose virtual hosts
// have a CORS policy: it does nothing on a host without one, and on a
// host with one answers the preflights and adds the access-control
// headers, with the host's policy (the virtual host's
// typed_per_filter_config).
type corsFilter struct{}

func (corsFilter) name() string { return CORSFilterName }

func (corsFilter) needed(h hcmSettings) bool { return h.cors }

func (corsFilter) httpFilters(hcmSettings) []*hcmv3.HttpFilter {
	return oneFilter(CORSFilterName, &corsv3.Cors{})
}

// perRoute is a route's own policy, which Envoy takes in place of its
// host's.
func (corsFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.CORS == nil {
		return "", nil
	}
	return CORSFilterName, corsPolicy(r.CORS)
}

func (corsFilter) perHost(vh *ir.VirtualHost) (string, proto.Message) {
	if vh.CORS == nil {
		return "", nil
	}
	return CORSFilterName, corsPolicy(vh.CORS)
}

// corsPolicy is the host's policy as Envoy's. An allowed origin "*"
// allows any: Envoy matches each allowed origin against "*" as well as
// the request's Origin. Exact origins compare ignoring case, as origins
// do.
func corsPolicy(p *ir.CORSPolicy) *corsv3.CorsPolicy {
	out := &corsv3.CorsPolicy{
		AllowMethods:  strings.Join(p.AllowMethods, ","),
		AllowHeaders:  strings.Join(p.AllowHeaders, ","),
		ExposeHeaders: strings.Join(p.ExposeHeaders, ","),
	}
	for _, o := range p.AllowOrigins {
		m := &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o.Value}, IgnoreCase: true}
		if o.Regex {
			m = &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(o.Value)}}
		}
		out.AllowOriginStringMatch = append(out.AllowOriginStringMatch, m)
	}
	if p.MaxAge != nil {
		out.MaxAge = strconv.FormatInt(int64(p.MaxAge.Seconds()), 10)
	}
	if p.AllowCredentials {
		out.AllowCredentials = wrapperspb.Bool(true)
	}
	if p.AllowPrivateNetwork {
		out.AllowPrivateNetworkAccess = wrapperspb.Bool(true)
	}
	if p.AnswerUnmatchedPreflights {
		out.ForwardNotMatchingPreflights = wrapperspb.Bool(false)
	}
	return out
}

// hostsHaveCORS says whether one of hosts, or one of their routes, has a
// CORS policy.
func hostsHaveCORS(hosts []*ir.VirtualHost) bool {
	for _, vh := range hosts {
		if vh.CORS != nil {
			return true
		}
		for _, r := range vh.Routes {
			if r.CORS != nil {
				return true
			}
		}
	}
	return false
}
