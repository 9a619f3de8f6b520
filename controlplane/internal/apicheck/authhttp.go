package apicheck

import (
	"fmt"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// CheckAuthServiceType validates an authorization server's serviceType
// and httpSettings, for an HTTPProxy's authorization as for the
// configuration file's globalExtAuth (typeField names serviceType's field:
// serviceType, serviceAPIType). httpSettings belongs to an HTTP server;
// packAsBytes and context extensions exist only in the gRPC protocol (an
// HTTP server receives the body as it is, and no context): errors rather
// than settings silently dropped. Each message starts with its field.
func CheckAuthServiceType(typeField string, t contourv1.AuthorizationServiceType, h *contourv1.HTTPAuthorizationServerSettings, body *contourv1.AuthorizationServerBufferSettings, policy *contourv1.AuthorizationPolicy) []string {
	var errs []string
	add := func(field, format string, args ...any) {
		errs = append(errs, field+": "+fmt.Sprintf(format, args...))
	}
	switch t {
	case "", contourv1.AuthorizationGRPCService:
		if h != nil {
			add("httpSettings", "is only valid with %s: http (the server is a gRPC one)", typeField)
		}
		return errs
	case contourv1.AuthorizationHTTPService:
	default:
		add(typeField, "%q is not supported: use grpc or http", t)
		return errs
	}
	if body != nil && body.PackAsBytes {
		add("withRequestBody.packAsBytes", "exists only in the gRPC protocol (an HTTP authorization server receives the body as it is): remove it")
	}
	if policy != nil && len(policy.Context) > 0 {
		add("authPolicy.context", "context extensions exist only in the gRPC protocol: an HTTP authorization server cannot receive them")
	}
	if h == nil {
		return errs
	}
	if p := h.PathPrefix; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# \t\r\n")) {
		add("httpSettings.pathPrefix", "%q must start with / and be a path only (no query, fragment or whitespace)", p)
	}
	for _, l := range []struct {
		field string
		list  []contourv1.HTTPAuthorizationServerAllowedHeaders
	}{
		{"httpSettings.allowedAuthorizationHeaders", h.AllowedAuthorizationHeaders},
		{"httpSettings.allowedUpstreamHeaders", h.AllowedUpstreamHeaders},
	} {
		for i, m := range l.list {
			if _, _, err := AllowedHeaderMatch(m); err != nil {
				add(fmt.Sprintf("%s[%d]", l.field, i), "%v", err)
			}
		}
	}
	return errs
}

// AllowedHeaderMatch is the one kind (exact, prefix, suffix, contains) and
// value of a header name matcher; an error unless exactly one is set.
func AllowedHeaderMatch(m contourv1.HTTPAuthorizationServerAllowedHeaders) (kind, value string, err error) {
	n := 0
	for _, k := range []struct{ kind, v string }{{"exact", m.Exact}, {"prefix", m.Prefix}, {"suffix", m.Suffix}, {"contains", m.Contains}} {
		if k.v != "" {
			kind, value = k.kind, k.v
			n++
		}
	}
	switch {
	case n != 1:
		return "", "", fmt.Errorf("set exactly one of exact, prefix, suffix and contains (%d set)", n)
	case strings.ContainsAny(value, " \t\r\n:"):
		return "", "", fmt.Errorf("%s %q is not part of a header name", kind, value)
	}
	return kind, value, nil
}
