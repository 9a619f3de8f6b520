package httpproxy

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// jwtScope is what the routes of a host (and those it includes) see of its
// JWT providers.
type jwtScope struct {
	// names are the providers' names (invalid ones too: the root is not
	// served anyway, and its routes need not repeat why).
	names map[string]bool
	// def is the default provider's name; "" for none.
	def string
}

// hostJWT is a root's JWT verification: its providers, for its TLS host's
// own HCM, and the clusters that fetch their keys (added only when the
// root is served). JWT verification needs an HCM of the host's own: a
// host without TLS, or with the fallback certificate (whose HCM other
// hosts share), cannot have providers.
type hostJWT struct {
	providers []ir.JWTProvider
	clusters  []*ir.Cluster
	scope     jwtScope
}

// jwtProviders validates spec.virtualhost.jwtProviders, as Contour does,
// and more strictly where Contour fails open (docs/httpproxy.md).
func (b *rootBuilder) jwtProviders(p *contourv1.HTTPProxy, st *status.Object) hostJWT {
	vh := p.Spec.VirtualHost
	var out hostJWT
	if len(vh.JWTProviders) == 0 {
		return out
	}
	fail := func(reason, format string, args ...any) {
		st.AddError(contourv1.ConditionTypeJWTVerificationError, reason, fmt.Sprintf(format, args...))
	}
	switch {
	case vh.TLS == nil || vh.TLS.SecretName == "":
		fail(status.ReasonJWTVerificationNotPermitted, "Spec.VirtualHost.JWTProviders can only be defined for root HTTPProxies that terminate TLS")
	case vh.TLS.EnableFallbackCertificate:
		// Contour's type and reason.
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonTLSIncompatibleFeatures, "Spec.Virtualhost.TLS fallback & JWT providers are incompatible: the fallback certificate's filter chain is shared by other hosts")
	}
	out.scope.names = map[string]bool{}
	for i, jp := range vh.JWTProviders {
		where := fmt.Sprintf("Spec.VirtualHost.JWTProviders[%d]", i)
		switch {
		case jp.Name == "":
			fail(status.ReasonDuplicateProviderName, "%s: name is required", where)
			continue
		case out.scope.names[jp.Name]:
			fail(status.ReasonDuplicateProviderName, "%s: duplicate provider name %q", where, jp.Name)
			continue
		}
		out.scope.names[jp.Name] = true
		if jp.Default {
			if out.scope.def != "" {
				fail(status.ReasonMultipleDefaultProvidersSpecified, "%s: at most one provider can be the default (%q already is)", where, out.scope.def)
			}
			out.scope.def = jp.Name
		}
		provider := ir.JWTProvider{Name: jp.Name, Issuer: jp.Issuer, Audiences: jp.Audiences, Forward: jp.ForwardJWT, JWKSURI: jp.RemoteJWKS.URI}
		c, reason, err := b.jwksCluster(jp.RemoteJWKS, p.Namespace)
		if err != nil {
			fail(reason, "%s.RemoteJWKS: %v", where, err)
			continue
		}
		provider.JWKSCluster = c.Name
		if provider.JWKSTimeout, provider.CacheDuration, reason, err = jwksDurations(jp.RemoteJWKS); err != nil {
			fail(reason, "%s.RemoteJWKS: %v", where, err)
			continue
		}
		out.providers = append(out.providers, provider)
		out.clusters = append(out.clusters, c)
	}
	return out
}

// jwksCluster is the cluster Envoy fetches a key set through: the URI's
// host (by DNS) and port, over TLS for https. The server of an https URI
// is always verified, unlike in Contour (which skips verification without
// a validation): keys fetched from a server whose certificate nobody
// checked would let whoever is on the path sign the tokens. A URI naming
// this host is refused as an ExternalName Service naming it is (it could
// reach Envoy's admin interface).
func (b *rootBuilder) jwksCluster(r contourv1.RemoteJWKS, namespace string) (*ir.Cluster, string, error) {
	u, reason, err := jwksURI(r.URI)
	if err != nil {
		return nil, reason, err
	}
	host := u.Hostname()
	if err := b.R.Opts().LoopbackAllowed("host", host); err != nil {
		return nil, status.ReasonRemoteJWKSURIInvalid, fmt.Errorf("URI %q: %v", r.URI, err)
	}
	port, err := jwksPort(u, r.URI)
	if err != nil {
		return nil, status.ReasonRemoteJWKSPortInvalid, err
	}
	switch r.DNSLookupFamily {
	case "", "auto", "v4", "v6":
	default:
		return nil, status.ReasonRemoteJWKSDNSLookupFamilyInvalid, fmt.Errorf("dnsLookupFamily %q is not auto, v4 or v6", r.DNSLookupFamily)
	}
	c := &ir.Cluster{DNSName: host, DNSPort: port, DNSLookupFamily: r.DNSLookupFamily}
	c.Name = fmt.Sprintf("jwks/%s/%s/%d", u.Scheme, host, port)
	if r.DNSLookupFamily != "" {
		c.Name += "/" + r.DNSLookupFamily
	}
	if err := b.jwksValidation(c, u.Scheme, r.UpstreamValidation, namespace); err != nil {
		if core.IsNotDelegated(err) {
			return nil, status.ReasonRemoteJWKSCACertificateNotDelegated, err // as Contour
		}
		return nil, status.ReasonRemoteJWKSUpstreamValidationInvalid, err
	}
	return c, "", nil
}

// jwksURI parses a key set's URI: http or https, with a host, and no
// user, fragment or control bytes; the reason says what is wrong.
func jwksURI(uri string) (*url.URL, string, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return nil, status.ReasonRemoteJWKSURIInvalid, fmt.Errorf("URI %q is invalid: %v", uri, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, status.ReasonRemoteJWKSSchemeInvalid, fmt.Errorf("URI %q has scheme %q: use http or https", uri, u.Scheme)
	case u.Hostname() == "" || u.User != nil || u.Fragment != "":
		return nil, status.ReasonRemoteJWKSURIInvalid, fmt.Errorf("URI %q must have a host, and no user or fragment", uri)
	}
	if err := core.NoControlBytes(uri); err != nil {
		return nil, status.ReasonRemoteJWKSURIInvalid, fmt.Errorf("URI %w", err)
	}
	return u, "", nil
}

// jwksPort is the port of an http or https URI u (uri as written): its
// own, or its scheme's.
func jwksPort(u *url.URL, uri string) (uint32, error) {
	if u.Port() == "" {
		return map[string]uint32{"http": 80, "https": 443}[u.Scheme], nil
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("URI %q has an invalid port", uri)
	}
	return uint32(port), nil
}

// jwksValidation sets the TLS of a key set's cluster c: an https URI is
// verified with its validation (v), which an http one cannot have, or
// without one against the system's trust roots with the URI's host as
// SNI and subject name (as a browser would; an AWS Cognito or other
// public identity provider's key set). Never unverified: without system
// roots such a URI is refused.
func (b *rootBuilder) jwksValidation(c *ir.Cluster, scheme string, v *contourv1.UpstreamValidation, namespace string) error {
	switch {
	case scheme == "http" && v != nil:
		return fmt.Errorf("validation applies to an https URI only")
	case scheme == "https" && v == nil:
		uv, err := b.SystemRootsValidation(c.DNSName)
		if err != nil {
			return fmt.Errorf("an https URI without validation is verified against the system's trust roots, but %w", err)
		}
		c.Protocol, c.Validation, c.SNI = ir.TLS, uv, c.DNSName
		c.Name += "/" + core.SystemCASecretName
	case scheme == "https":
		uv, err := b.UpstreamValidation(v, namespace)
		if err != nil {
			return fmt.Errorf("validation: %w", err)
		}
		c.Protocol, c.Validation, c.SNI = ir.TLS, uv, c.DNSName
		c.Name += "/" + core.SettingsHash(strings.TrimPrefix(core.ValidationKey(uv), "&"))
	}
	return nil
}

// jwksDurations reads the fetch timeout (1s when empty, as in Contour)
// and the cache duration (nil when empty: Envoy's default).
func jwksDurations(r contourv1.RemoteJWKS) (time.Duration, *time.Duration, string, error) {
	timeout := time.Second
	if r.Timeout != "" {
		d, err := time.ParseDuration(r.Timeout)
		if err != nil || d <= 0 {
			return 0, nil, status.ReasonRemoteJWKSTimeoutInvalid, fmt.Errorf("timeout %q is not a positive duration", r.Timeout)
		}
		timeout = d
	}
	if r.CacheDuration == "" {
		return timeout, nil, "", nil
	}
	d, err := time.ParseDuration(r.CacheDuration)
	if err != nil || d <= 0 {
		return 0, nil, status.ReasonRemoteJWKSCacheDurationInvalid, fmt.Errorf("cacheDuration %q is not a positive duration", r.CacheDuration)
	}
	return timeout, &d, "", nil
}

// routeJWT sets the provider that verifies the route's requests: the one
// its jwtVerificationPolicy requires, none when it disables verification,
// else the host's default. A route served over plain HTTP
// (permitInsecure) cannot require one: the HTTP listener's HCM, shared by
// every host, does not verify JWTs (Contour serves it unverified there).
func routeJWT(rt *Route, r *contourv1.Route, s jwtScope, errs *routeErrors) {
	pol := r.JWTVerificationPolicy
	add := func(reason, format string, args ...any) {
		errs.add(contourv1.ConditionTypeJWTVerificationError, reason, format, args...)
	}
	switch {
	case pol != nil && pol.Require != "" && pol.Disabled:
		add(status.ReasonInvalidJWTVerificationPolicy, "JWTVerificationPolicy: require and disabled cannot both be set")
		return
	case pol != nil && pol.Require != "":
		if !s.names[pol.Require] {
			add(status.ReasonJWTProviderNotDefined, "JWTVerificationPolicy: require names %q, which is not one of the virtual host's jwtProviders", pol.Require)
			return
		}
		rt.JWTProvider = pol.Require
	case pol != nil && pol.Disabled:
	default:
		rt.JWTProvider = s.def
	}
	if rt.JWTProvider != "" && r.PermitInsecure {
		add(status.ReasonJWTVerificationNotPermitted, "permitInsecure: the route would be served over plain HTTP without JWT verification (of provider %q): set jwtVerificationPolicy.disabled, or drop permitInsecure", rt.JWTProvider)
	}
}
