package builder

import (
	"errors"
	"fmt"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// DefaultAuthTimeout is how long Envoy waits for a check when neither the
// HTTPProxy nor the ExtensionService says: long enough for a bcrypt check
// or an OIDC code exchange, short enough to fail fast.
const DefaultAuthTimeout = 2 * time.Second

// authScope is the authorization (and processing) in force where routes
// are being built.
type authScope struct {
	// enabled: the HCM of these routes has an ext_authz filter.
	enabled bool
	// own: the filter is the host's own authorization (not the global one).
	own bool
	// global: the filter is the global authorization.
	global bool
	// optOut: the host opted out of global authorization
	// (globalExtAuthDisabled): every route is off, whatever its policy.
	optOut bool
	policy contourv1.AuthorizationPolicy
	proc   procScope
}

// hostAuthScope decides which authorization applies to a host's routes and
// which ext_authz filter its own HCM (TLS hosts) gets: the host's own
// authorization overrides the global one; globalExtAuthDisabled opts out of
// the global one; otherwise the global one applies, its policy refined by
// the host's authPolicy (context: global, then host, then route).
func (b *rootBuilder) hostAuthScope(p *contourv1.HTTPProxy, own *ir.ExtAuth) (authScope, *ir.ExtAuth) {
	a := p.Spec.VirtualHost.Authorization
	switch {
	case own != nil:
		scope := authScope{enabled: true, own: true}
		if a.AuthPolicy != nil {
			scope.policy = *a.AuthPolicy
		}
		return scope, own
	case b.r.global().auth == nil:
		return authScope{}, nil
	case a != nil && a.GlobalExternalAuthorizationDisabled:
		// The shared HCMs (HTTP listener, fallback chain) keep the
		// filter and switch it off on each of this host's routes.
		return authScope{enabled: true, optOut: true}, nil
	}
	var hostPolicy *contourv1.AuthorizationPolicy
	if a != nil {
		hostPolicy = a.AuthPolicy
	}
	return authScope{enabled: true, global: true, policy: mergePolicy(b.r.global().authPolicy, hostPolicy)}, b.r.global().auth
}

// secureHost validates spec.virtualhost.tls; nil when the host has none.
func (b *rootBuilder) secureHost(p *contourv1.HTTPProxy, st *status.Object) *ir.SecureVirtualHost {
	t := p.Spec.VirtualHost.TLS
	if t == nil {
		return nil
	}
	out := &ir.SecureVirtualHost{MinTLSVersion: t.MinimumProtocolVersion, MaxTLSVersion: t.MaximumProtocolVersion}
	if t.SecretName == "" {
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonSecretNameRequired, "Spec.VirtualHost.TLS.SecretName must be specified")
	} else if name, err := b.tlsSecret(t.SecretName, p.Namespace); err != nil {
		ref := splitRef(t.SecretName, p.Namespace).String()
		switch {
		case errors.Is(err, errSecretNotFound):
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonSecretNotFound, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q not found", ref))
		case errors.Is(err, errNotDelegated):
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonDelegationNotPermitted, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q certificate delegation not permitted", ref))
		default:
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonSecretInvalid, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q is invalid: %v", ref, err))
		}
	} else {
		out.Secret = name
	}
	if t.MinimumProtocolVersion == "1.3" && t.MaximumProtocolVersion == "1.2" {
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonTLSVersionsInvalid, "Spec.VirtualHost.TLS minimumProtocolVersion 1.3 is above maximumProtocolVersion 1.2")
	}
	if cv := t.ClientValidation; cv != nil {
		out.ClientValidation = &ir.ClientValidation{SkipVerification: cv.SkipClientCertValidation, Optional: cv.OptionalClientCertificate}
		switch {
		case cv.SkipClientCertValidation && cv.CACertificate != "":
			st.AddError(contourv1.ConditionTypeTLSClientValidationError, status.ReasonClientValidationInvalid, "Spec.VirtualHost.TLS client validation is invalid: caSecret and skipClientCertValidation are mutually exclusive")
		case !cv.SkipClientCertValidation:
			name, err := b.caSecret(cv.CACertificate, p.Namespace)
			if err != nil {
				st.AddError(contourv1.ConditionTypeTLSClientValidationError, status.ReasonClientValidationInvalid, "Spec.VirtualHost.TLS client validation is invalid: "+err.Error())
			}
			out.ClientValidation.CASecret = name
		}
	}
	if t.EnableFallbackCertificate {
		switch {
		case t.ClientValidation != nil:
			st.AddError(contourv1.ConditionTypeTLSFallbackError, status.ReasonTLSIncompatibleFeatures, "Spec.Virtualhost.TLS fallback & client validation are incompatible together")
		case b.r.opts().FallbackCertificate == "":
			st.AddError(contourv1.ConditionTypeTLSFallbackError, status.ReasonFallbackNotConfigured, "Spec.Virtualhost.TLS enabled fallback but the fallback Certificate Secret is not configured in the control plane (--fallback-certificate)")
		default:
			fb := splitRef(b.r.opts().FallbackCertificate, "")
			if _, err := b.tlsSecret(b.r.opts().FallbackCertificate, fb.Namespace); err != nil {
				st.AddError(contourv1.ConditionTypeTLSFallbackError, status.ReasonFallbackCertificateInvalid, fmt.Sprintf("Spec.Virtualhost.TLS Secret %q fallback certificate is invalid: %v", fb.String(), err))
			} else if fb.Namespace != p.Namespace && !b.r.delegated(fb, p.Namespace) {
				st.AddError(contourv1.ConditionTypeTLSFallbackError, status.ReasonFallbackNotDelegated, fmt.Sprintf("Spec.VirtualHost.TLS fallback Secret %q is not configured for certificate delegation", fb.String()))
			}
		}
	}
	return out
}

// authorization validates spec.virtualhost.authorization; nil when the host
// has none (or only opts out of global authorization).
func (b *rootBuilder) authorization(p *contourv1.HTTPProxy, secure bool, st *status.Object) *ir.ExtAuth {
	a := p.Spec.VirtualHost.Authorization
	if a == nil || a.ExtensionServiceRef.Name == "" {
		// Without an extensionRef, authorization may only opt out of the
		// global authorization or refine its policy.
		refinesGlobal := b.r.global().auth != nil && a != nil && a.AuthPolicy != nil
		if a != nil && !a.GlobalExternalAuthorizationDisabled && !refinesGlobal {
			st.AddError(contourv1.ConditionTypeAuthError, status.ReasonExtensionServiceRefRequired, "Spec.VirtualHost.Authorization.ExtensionRef.Name must be specified (or set globalExtAuthDisabled: true to opt out of global authorization, or an authPolicy to refine it)")
		}
		return nil
	}
	fail := func(reason, format string, args ...any) *ir.ExtAuth {
		st.AddError(contourv1.ConditionTypeAuthError, reason, fmt.Sprintf(format, args...))
		return nil
	}
	if !secure {
		return fail(status.ReasonAuthNotPermitted, "Spec.VirtualHost.Authorization requires Spec.VirtualHost.TLS: authorization of its own is only supported on HTTPS virtual hosts (HTTP virtual hosts use the global authorization of the configuration file, globalExtAuth)")
	}
	if p.Spec.VirtualHost.TLS.EnableFallbackCertificate {
		return fail(status.ReasonAuthIncompatibleWithFallback, "Spec.VirtualHost.Authorization is incompatible with Spec.VirtualHost.TLS.EnableFallbackCertificate: the fallback certificate chain is shared by several virtual hosts")
	}
	ref := a.ExtensionServiceRef
	if ref.APIVersion != "" && ref.APIVersion != v1alpha1.GroupVersion.String() {
		return fail(status.ReasonAuthBadResourceVersion, "Spec.VirtualHost.Authorization.ExtensionRef specifies an unsupported resource version %q: use %q", ref.APIVersion, v1alpha1.GroupVersion.String())
	}
	if ref.Kind != "" && ref.Kind != KindExtensionService {
		return fail(status.ReasonAuthBadResourceKind, "Spec.VirtualHost.Authorization.ExtensionRef specifies an unsupported kind %q: use %q", ref.Kind, KindExtensionService)
	}
	ns := ref.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	ext, reason, msg := b.r.extension(ns, ref.Name)
	if ext == nil {
		return fail(reason, "Spec.VirtualHost.Authorization.ExtensionRef %s", msg)
	}
	out := &ir.ExtAuth{Cluster: ext.cluster.Name, Authority: ext.authority, FailOpen: a.FailOpen, Timeout: DefaultAuthTimeout}
	if ext.timeout != nil {
		out.Timeout = *ext.timeout
	}
	d, err := config.ParseTimeout(a.ResponseTimeout)
	if err != nil {
		return fail(status.ReasonAuthResponseTimeoutInvalid, "Spec.VirtualHost.Authorization.ResponseTimeout is invalid: %v", err)
	}
	if d != nil {
		out.Timeout = *d
	}
	if w := a.WithRequestBody; w != nil {
		out.WithRequestBody = &ir.BufferSettings{MaxRequestBytes: w.MaxRequestBytes, AllowPartialMessage: w.AllowPartialMessage, PackAsBytes: w.PackAsBytes}
		if out.WithRequestBody.MaxRequestBytes == 0 {
			out.WithRequestBody.MaxRequestBytes = 1024
		}
	}
	return out
}
