package translator

import (
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ExtAuthzFilterName is the external authorization filter's name in Envoy.
const ExtAuthzFilterName = "envoy.filters.http.ext_authz"

// extAuthzFilter is external authorization (docs/design/external-authorization.md):
// in an HCM when an authorization applies to it, its own or the global one.
type extAuthzFilter struct{}

func (extAuthzFilter) name() string { return ExtAuthzFilterName }

func (extAuthzFilter) needed(h hcmSettings) bool { return h.auth != nil }

func (extAuthzFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	a := h.auth
	if a.HTTP != nil {
		return oneFilter(ExtAuthzFilterName, extAuthz(a))
	}
	k := extAuthzKey{cluster: a.Cluster, authority: a.Authority, timeout: a.Timeout, failOpen: a.FailOpen}
	if b := a.WithRequestBody; b != nil {
		k.body, k.withBody = *b, true
	}
	return []*hcmv3.HttpFilter{sharedExtAuthz.get(k, func() *hcmv3.HttpFilter {
		return typedHTTPFilter(ExtAuthzFilterName, extAuthz(a))
	})}
}

// extAuthzKey is everything extAuthz reads of a gRPC authorization: the
// HCMs of thousands of TLS hosts checked by one server share its filter
// (packing it for each host was ~6% of a full build).
type extAuthzKey struct {
	cluster, authority string
	timeout            time.Duration
	failOpen, withBody bool
	body               ir.BufferSettings
}

var sharedExtAuthz = newShared[extAuthzKey, *hcmv3.HttpFilter](1024)

func (extAuthzFilter) perRoute(r *ir.Route) (string, proto.Message) {
	return ExtAuthzFilterName, extAuthzPerRoute(r)
}

// extAuthz is the ext_authz filter of one HCM.
func extAuthz(a *ir.ExtAuth) *extauthzv3.ExtAuthz {
	cfg := &extauthzv3.ExtAuthz{
		Services:            &extauthzv3.ExtAuthz_GrpcService{GrpcService: grpcService(a.Cluster, a.Authority, &a.Timeout)},
		TransportApiVersion: corev3.ApiVersion_V3,
		FailureModeAllow:    a.FailOpen,
		// Client certificates are always sent when present
		// (docs/design/external-authorization.md).
		IncludePeerCertificate: true,
		// Auth servers are not always ours: a header an auth server adds
		// or removes that is not valid HTTP becomes a clean error response
		// instead of reaching the client or the upstream.
		ValidateMutations: true,
	}
	if b := a.WithRequestBody; b != nil {
		cfg.WithRequestBody = &extauthzv3.BufferSettings{
			MaxRequestBytes:     b.MaxRequestBytes,
			AllowPartialMessage: b.AllowPartialMessage,
			PackAsBytes:         b.PackAsBytes,
		}
	}
	if a.HTTP != nil {
		extAuthzHTTP(cfg, a) // extauthz_http.go
	}
	return cfg
}

// extAuthzPerRoute is set on every route of an HCM with ext_authz, packed:
// either off (also on a route authorized by its own filter,
// routefilters.go), or on with the route's context. The filter is never
// left out of an HCM because a virtual host's default is "disabled".
// Nearly every route is off or checked without a context: those two are
// packed once and shared by the routes (a message is never modified once
// built), rather than packed again, to the same bytes, for each of
// thousands of routes.
func extAuthzPerRoute(r *ir.Route) *anypb.Any {
	switch {
	case r.AuthDisabled || r.Auth != nil:
		return packedExtAuthzDisabled()
	case len(r.AuthContext) == 0:
		return packedExtAuthzCheck()
	}
	return mustAny(extAuthzCheck(r))
}

var (
	packedExtAuthzDisabled = sync.OnceValue(func() *anypb.Any {
		return mustAny(&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}})
	})
	packedExtAuthzCheck = sync.OnceValue(func() *anypb.Any { return mustAny(extAuthzCheck(&ir.Route{})) })
)

// extAuthzCheck has the route checked, with its context.
func extAuthzCheck(r *ir.Route) *extauthzv3.ExtAuthzPerRoute {
	return &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{
		CheckSettings: &extauthzv3.CheckSettings{ContextExtensions: r.AuthContext},
	}}
}
