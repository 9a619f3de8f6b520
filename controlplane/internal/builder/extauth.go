package builder

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

// authFields name an authorization server's fields in messages (an
// HTTPProxy's and a policy's spell them differently).
type authFields struct{ ref, timeout string }

// authServer resolves an authorization server, for an HTTPProxy's
// authorization as for an ExtAuthPolicy: its extensionRef's version and
// kind, its ExtensionService (in defaultNamespace when the ref names
// none), which must exist and be valid, and its settings (extAuth). nil,
// with the reason and message, when it cannot be used.
func authServer(r *Resolver, a *contourv1.AuthorizationServer, defaultNamespace string, f authFields) (out *ir.ExtAuth, reason, message string) {
	ref := a.ExtensionServiceRef
	if reason, msg := extensionRefProblem(ref, f.ref); reason != "" {
		return nil, reason, msg
	}
	if ref.Namespace == "" {
		ref.Namespace = defaultNamespace
	}
	ext, reason, msg := r.extension(ref.Namespace, ref.Name)
	if ext == nil {
		return nil, reason, f.ref + " " + msg
	}
	out, err := extAuth(a, ext)
	if err != nil {
		return nil, status.ReasonAuthResponseTimeoutInvalid, fmt.Sprintf("%s is invalid: %v", f.timeout, err)
	}
	return out, "", ""
}

// authServiceType checks a host's serviceType and httpSettings
// (extauth_http.go has what they become); "" when they are valid.
func authServiceType(a *contourv1.AuthorizationServer, where string) (reason, message string) {
	errs := apicheck.CheckAuthServiceType("serviceType", a.ServiceType, a.HTTPServerSettings, a.WithRequestBody, a.AuthPolicy)
	if len(errs) == 0 {
		return "", ""
	}
	return status.ReasonAuthHTTPSettingsInvalid, where + ": " + strings.Join(errs, "; ")
}

// extensionRefProblem says why an authorization server's extensionRef
// names something other than an ExtensionService ("" when it does not);
// where names the field.
func extensionRefProblem(ref contourv1.ExtensionServiceReference, where string) (reason, message string) {
	switch {
	case ref.APIVersion != "" && ref.APIVersion != v1alpha1.GroupVersion.String():
		return status.ReasonAuthBadResourceVersion, fmt.Sprintf("%s specifies an unsupported resource version %q: use %q", where, ref.APIVersion, v1alpha1.GroupVersion.String())
	case ref.Kind != "" && ref.Kind != KindExtensionService:
		return status.ReasonAuthBadResourceKind, fmt.Sprintf("%s specifies an unsupported kind %q: use %q", where, ref.Kind, KindExtensionService)
	}
	return "", ""
}

// extAuth is the ext_authz filter of a host's authorization through ext:
// the timeout is the host's, else the ExtensionService's, else the
// default; a request body buffer defaults to 1 KiB.
func extAuth(a *contourv1.AuthorizationServer, ext *extension) (*ir.ExtAuth, error) {
	out := &ir.ExtAuth{Cluster: ext.cluster.Name, Authority: ext.authority, FailOpen: a.FailOpen, Timeout: DefaultAuthTimeout}
	if ext.timeout != nil {
		out.Timeout = *ext.timeout
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
