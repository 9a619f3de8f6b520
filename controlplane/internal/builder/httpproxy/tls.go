package httpproxy

import (
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// secureHost validates spec.virtualhost.tls; nil when the host has none.
func (b *rootBuilder) secureHost(p *contourv1.HTTPProxy, st *status.Object) *ir.SecureVirtualHost {
	t := p.Spec.VirtualHost.TLS
	if t == nil {
		return nil
	}
	if t.Passthrough {
		return passthroughHost(t, st) // tcpproxy.go
	}
	out := &ir.SecureVirtualHost{MinTLSVersion: t.MinimumProtocolVersion, MaxTLSVersion: t.MaximumProtocolVersion}
	out.Secret = b.serverCertificate(t.SecretName, p.Namespace, st)
	for _, v := range []struct{ field, value string }{
		{"minimumProtocolVersion", t.MinimumProtocolVersion}, {"maximumProtocolVersion", t.MaximumProtocolVersion},
	} {
		// Contour's values, "1.2" and "1.3"; unset, the minimum is 1.2 and
		// the maximum 1.3 (the translator's defaults). Contour serves any
		// other value as the default, maybe more openly than written; it
		// is refused here (the CRD's enum, which files do not go through),
		// with Contour's reason for TLS versions it refuses.
		if v.value != "" && v.value != "1.2" && v.value != "1.3" {
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonTLSConfigNotValid, fmt.Sprintf("Spec.VirtualHost.TLS.%s %q is not supported: use 1.2 or 1.3", v.field, v.value))
		}
	}
	if t.MinimumProtocolVersion == "1.3" && t.MaximumProtocolVersion == "1.2" {
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonTLSConfigNotValid, "Spec.VirtualHost.TLS the minimum protocol version is greater than the maximum protocol version")
	}
	if cv := t.ClientValidation; cv != nil {
		out.ClientValidation = b.clientValidation(cv, p.Namespace, st)
	}
	if t.EnableFallbackCertificate {
		b.fallbackCertificate(t, p.Namespace, st)
	}
	return out
}

// serverCertificate resolves the host's certificate Secret; "" (with an
// error) when it cannot be used.
func (b *rootBuilder) serverCertificate(secretName, namespace string, st *status.Object) string {
	if secretName == "" {
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonTLSConfigNotValid, "Spec.VirtualHost.TLS.SecretName must be specified")
		return ""
	}
	name, err := b.TLSSecret(secretName, namespace)
	if err != nil {
		reason, msg := core.CertificateProblem(core.SplitRef(secretName, namespace).String(), err)
		st.AddError(contourv1.ConditionTypeTLSError, reason, msg)
	}
	return name
}

// clientValidation validates spec.virtualhost.tls.clientValidation.
func (b *rootBuilder) clientValidation(cv *contourv1.DownstreamValidation, namespace string, st *status.Object) *ir.ClientValidation {
	out := &ir.ClientValidation{SkipVerification: cv.SkipClientCertValidation, Optional: cv.OptionalClientCertificate}
	if f := cv.ForwardClientCertificate; f != nil {
		out.ForwardClientCert = &ir.ForwardClientCert{Subject: f.Subject, Cert: f.Cert, Chain: f.Chain, DNS: f.DNS, URI: f.URI}
	}
	invalid := func(err error) *ir.ClientValidation {
		if core.IsNotDelegated(err) {
			// Contour's reason for a CA or CRL Secret not delegated.
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonDelegationNotPermitted, "Spec.VirtualHost.TLS client validation is invalid: "+err.Error())
			return out
		}
		st.AddError(contourv1.ConditionTypeTLSError, status.ReasonClientValidationInvalid, "Spec.VirtualHost.TLS client validation is invalid: "+err.Error())
		return out
	}
	var ca *ir.Secret
	// With skipClientCertValidation a certificate is requested (required
	// unless optional) but not verified; a caSecret beside it is sent to
	// Envoy too, as Contour does, which checks certificates against it
	// and accepts them whatever the outcome (ACCEPT_UNTRUSTED).
	if !cv.SkipClientCertValidation || cv.CACertificate != "" {
		var err error
		if ca, err = b.R.CASecret(cv.CACertificate, namespace); err != nil {
			return invalid(err)
		}
	}
	// The CA bundle with the CRLs, if any, replaces the CA alone.
	vs, err := b.ClientCRL(cv, ca, namespace)
	if err != nil {
		return invalid(err)
	}
	if vs == nil {
		vs = ca
	}
	if vs != nil {
		b.Out.UseSecret(vs)
		out.CASecret = vs.Name
	}
	return out
}

// fallbackCertificate checks that a host enabling the fallback certificate
// may use it: no client validation, and the control plane's fallback
// Secret configured, valid and delegated to the host's namespace.
func (b *rootBuilder) fallbackCertificate(t *contourv1.TLS, namespace string, st *status.Object) {
	fallback := b.R.Opts().FallbackCertificate
	fail := func(reason, message string) {
		st.AddError(contourv1.ConditionTypeTLSError, reason, message)
	}
	switch {
	case t.ClientValidation != nil:
		fail(status.ReasonTLSIncompatibleFeatures, "Spec.Virtualhost.TLS fallback & client validation are incompatible together")
	case fallback == "":
		fail(status.ReasonFallbackNotPresent, "Spec.Virtualhost.TLS enabled fallback but the fallback Certificate Secret is not configured in the control plane (--fallback-certificate)")
	default:
		// Delegation first, as Contour: a Secret not delegated is
		// FallbackNotDelegated whether or not it exists.
		fb := core.SplitRef(fallback, "")
		if fb.Namespace != namespace && !b.R.Delegated(fb, namespace) {
			fail(status.ReasonFallbackNotDelegated, fmt.Sprintf("Spec.VirtualHost.TLS fallback Secret %q is not configured for certificate delegation", fb.String()))
		} else if _, err := b.TLSSecret(fallback, fb.Namespace); err != nil {
			fail(status.ReasonFallbackNotValid, fmt.Sprintf("Spec.Virtualhost.TLS Secret %q fallback certificate is invalid: %v", fb.String(), err))
		}
	}
}
