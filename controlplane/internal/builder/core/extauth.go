package core

import (
	"fmt"
	"strings"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// DefaultAuthTimeout is how long Envoy waits for a check when neither the
// HTTPProxy nor the ExtensionService says: long enough for a bcrypt check
// or an OIDC code exchange, short enough to fail fast.
const DefaultAuthTimeout = 2 * time.Second

// AuthFields name an authorization server's fields in messages (an
// HTTPProxy's and a policy's spell them differently).
type AuthFields struct{ Ref, Timeout string }

// AuthServer resolves an authorization server, for an HTTPProxy's
// authorization as for an ExtAuthPolicy: its extensionRef's version and
// kind, its ExtensionService (in defaultNamespace when the ref names
// none), which must exist and be valid, and its settings (extAuth). nil,
// with the reason and message, when it cannot be used.
func AuthServer(r *Resolver, a *contourv1.AuthorizationServer, defaultNamespace string, f AuthFields) (out *ir.ExtAuth, reason, message string) {
	ref := a.ExtensionServiceRef
	if reason, msg := ExtensionRefProblem(ref, f.Ref); reason != "" {
		return nil, reason, msg
	}
	if ref.Namespace == "" {
		ref.Namespace = defaultNamespace
	}
	ext, reason, msg := r.Extension(ref.Namespace, ref.Name)
	if ext == nil {
		return nil, reason, f.Ref + " " + msg
	}
	out, err := ExtAuth(a, ext)
	if err != nil {
		return nil, status.ReasonAuthResponseTimeoutInvalid, fmt.Sprintf("%s is invalid: %v", f.Timeout, err)
	}
	return out, "", ""
}

// AuthServiceType checks a host's serviceType and httpSettings
// (extauth_http.go has what they become); "" when they are valid.
func AuthServiceType(a *contourv1.AuthorizationServer, where string) (reason, message string) {
	errs := apicheck.CheckAuthServiceType("serviceType", a.ServiceType, a.HTTPServerSettings, a.WithRequestBody, a.AuthPolicy)
	if len(errs) == 0 {
		return "", ""
	}
	return status.ReasonAuthHTTPSettingsInvalid, where + ": " + strings.Join(errs, "; ")
}

// ExtensionRefProblem says why an authorization server's extensionRef
// names something other than an ExtensionService ("" when it does not);
// where names the field.
func ExtensionRefProblem(ref contourv1.ExtensionServiceReference, where string) (reason, message string) {
	switch {
	case ref.APIVersion != "" && ref.APIVersion != v1alpha1.GroupVersion.String():
		return status.ReasonAuthBadResourceVersion, fmt.Sprintf("%s specifies an unsupported resource version %q: use %q", where, ref.APIVersion, v1alpha1.GroupVersion.String())
	case ref.Kind != "" && ref.Kind != KindExtensionService:
		return status.ReasonAuthBadResourceKind, fmt.Sprintf("%s specifies an unsupported kind %q: use %q", where, ref.Kind, KindExtensionService)
	}
	return "", ""
}

// ExtAuth is the ext_authz filter of a host's authorization through ext:
// the timeout is the host's, else the ExtensionService's, else the
// default; a request body buffer defaults to 1 KiB.
func ExtAuth(a *contourv1.AuthorizationServer, ext *Extension) (*ir.ExtAuth, error) {
	out := &ir.ExtAuth{Cluster: ext.Cluster.Name, Authority: ext.Authority, FailOpen: a.FailOpen, Timeout: DefaultAuthTimeout}
	if ext.Timeout != nil {
		out.Timeout = *ext.Timeout
	}
	d, err := apicheck.ParseTimeout(a.ResponseTimeout)
	if err != nil {
		return nil, err
	}
	if d != nil {
		out.Timeout = *d
	}
	if w := a.WithRequestBody; w != nil {
		out.WithRequestBody = &ir.BufferSettings{MaxRequestBytes: w.MaxRequestBytes, AllowPartialMessage: w.AllowPartialMessage, PackAsBytes: w.PackAsBytes}
		if out.WithRequestBody.MaxRequestBytes == 0 {
			out.WithRequestBody.MaxRequestBytes = apicheck.DefaultMaxRequestBytes
		}
	}
	out.HTTP = httpAuthService(a.ServiceType, a.HTTPServerSettings)
	return out, nil
}
