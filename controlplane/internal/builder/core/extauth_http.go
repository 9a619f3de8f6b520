package core

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// httpAuthService is what an authorization server of serviceType http
// (the host's or globalExtAuth's serviceAPIType) becomes; nil for a gRPC
// one. The settings were checked (apicheck.CheckAuthServiceType).
func httpAuthService(t contourv1.AuthorizationServiceType, h *contourv1.HTTPAuthorizationServerSettings) *ir.HTTPAuthService {
	if t != contourv1.AuthorizationHTTPService {
		return nil
	}
	out := &ir.HTTPAuthService{}
	if h == nil {
		return out
	}
	out.PathPrefix = h.PathPrefix
	out.AllowedAuthorizationHeaders = nameMatches(h.AllowedAuthorizationHeaders)
	out.AllowedUpstreamHeaders = nameMatches(h.AllowedUpstreamHeaders)
	return out
}

func nameMatches(in []contourv1.HTTPAuthorizationServerAllowedHeaders) []ir.NameMatch {
	var out []ir.NameMatch
	for _, m := range in {
		kind, value, _ := apicheck.AllowedHeaderMatch(m)
		out = append(out, ir.NameMatch{Kind: kind, Value: value, IgnoreCase: m.IgnoreCase})
	}
	return out
}
