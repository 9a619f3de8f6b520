package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// JWTFilterName is Envoy's JWT authentication filter.
const JWTFilterName = "envoy.filters.http.jwt_authn"

// jwtFilter is the jwt_authn filter of a TLS host with JWT providers, in
// the host's own HCM: one requirement per provider, named after it; each
// route requires its provider's, or disables the filter
// (typed_per_filter_config).
type jwtFilter struct{}

func (jwtFilter) name() string { return JWTFilterName }

func (jwtFilter) needed(h hcmSettings) bool { return len(h.jwt) > 0 }

func (jwtFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	cfg := &jwtv3.JwtAuthentication{
		Providers:      make(map[string]*jwtv3.JwtProvider, len(h.jwt)),
		RequirementMap: make(map[string]*jwtv3.JwtRequirement, len(h.jwt)),
	}
	for _, p := range h.jwt {
		cfg.Providers[p.Name] = jwtProvider(p)
		cfg.RequirementMap[p.Name] = &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: p.Name}}
	}
	return oneFilter(JWTFilterName, cfg)
}

// perRoute requires the route's provider, or switches the filter off: a
// route without one is not verified, whatever tokens it gets.
func (jwtFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if r.JWTProvider == "" {
		return JWTFilterName, &jwtv3.PerRouteConfig{RequirementSpecifier: &jwtv3.PerRouteConfig_Disabled{Disabled: true}}
	}
	return JWTFilterName, &jwtv3.PerRouteConfig{RequirementSpecifier: &jwtv3.PerRouteConfig_RequirementName{RequirementName: r.JWTProvider}}
}

// jwtProvider fetches its keys from the JWKS URI through its cluster.
// Tokens are read where Envoy reads them by default: the Authorization
// header's Bearer token, or the access_token query parameter.
func jwtProvider(p ir.JWTProvider) *jwtv3.JwtProvider {
	remote := &jwtv3.RemoteJwks{HttpUri: &corev3.HttpUri{
		Uri:              p.JWKSURI,
		HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: p.JWKSCluster},
		Timeout:          durationpb.New(p.JWKSTimeout),
	}}
	if p.CacheDuration != nil {
		remote.CacheDuration = durationpb.New(*p.CacheDuration)
	}
	return &jwtv3.JwtProvider{
		Issuer:              p.Issuer,
		Audiences:           p.Audiences,
		Forward:             p.Forward,
		JwksSourceSpecifier: &jwtv3.JwtProvider_RemoteJwks{RemoteJwks: remote},
	}
}
