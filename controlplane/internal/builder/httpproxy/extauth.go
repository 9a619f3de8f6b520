package httpproxy

import (
	"fmt"
	"maps"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// authScope is the authorization (and processing) in force where routes
// are being built.
type authScope struct {
	// enabled: the HCM of these routes has an ext_authz filter.
	enabled bool
	// own: the filter is the host's own authorization (not the global one).
	own bool
	// global: the filter is the global authorization.
	global bool
	// http: the filter's server is an HTTP one, which gets no context.
	http bool
	// optOut: the host opted out of global authorization
	// (globalExtAuthDisabled): every route is off, whatever its policy.
	optOut bool
	// optOutForbidden: the configuration file forbids switching the
	// global authorization off (globalExtAuth.optOut: forbidden): no
	// route's authorization is disabled, whatever its policy.
	optOutForbidden bool
	policy          contourv1.AuthorizationPolicy
	proc            procScope
	// ipFilter is the virtual host's IP filter, which routes without
	// their own inherit (ipfilter.go).
	ipFilter *ir.IPFilter
	// jwt is the virtual host's JWT providers (jwt.go).
	jwt jwtScope
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
		scope := authScope{enabled: true, own: true, http: own.HTTP != nil}
		if a.AuthPolicy != nil {
			scope.policy = *a.AuthPolicy
		}
		return scope, own
	case b.R.Global().Auth == nil:
		return authScope{}, nil
	case a != nil && a.GlobalExternalAuthorizationDisabled && !b.R.Opts().GlobalExtAuth.OptOutForbidden():
		// The shared HCMs (HTTP listener, fallback chain) keep the
		// filter and switch it off on each of this host's routes.
		return authScope{enabled: true, optOut: true}, nil
	}
	var hostPolicy *contourv1.AuthorizationPolicy
	if a != nil {
		hostPolicy = a.AuthPolicy
	}
	g := b.R.Global().Auth
	return authScope{enabled: true, global: true, http: g.HTTP != nil, policy: core.MergePolicy(b.R.Global().AuthPolicy, hostPolicy)}, g
}

// authorization validates spec.virtualhost.authorization; nil when the host
// has none (or only opts out of global authorization).
func (b *rootBuilder) authorization(p *contourv1.HTTPProxy, secure bool, st *status.Object) *ir.ExtAuth {
	a := p.Spec.VirtualHost.Authorization
	if a == nil {
		return nil
	}
	g := b.R.Global().Auth
	if g != nil && b.R.Opts().GlobalExtAuth.OptOutForbidden() {
		refuseHostOptOut(a, st)
	}
	if a.ExtensionServiceRef.Name == "" {
		withoutServer(a, g != nil, g != nil && g.HTTP != nil, st)
		return nil
	}
	fail := func(reason, message string) *ir.ExtAuth {
		st.AddError(contourv1.ConditionTypeAuthError, reason, message)
		return nil
	}
	if reason, msg := authorizationRefProblem(p.Spec.VirtualHost, secure); reason != "" {
		if reason == status.ReasonTLSIncompatibleFeatures {
			st.AddError(contourv1.ConditionTypeTLSError, reason, msg) // as Contour
			return nil
		}
		return fail(reason, msg)
	}
	const where = "Spec.VirtualHost.Authorization"
	if reason, msg := core.AuthServiceType(a, where); reason != "" {
		return fail(reason, msg)
	}
	out, reason, msg := core.AuthServer(b.R, a, p.Namespace, core.AuthFields{Ref: where + ".ExtensionRef", Timeout: where + ".ResponseTimeout"})
	if out == nil {
		return fail(reason, msg)
	}
	out.Origins = ir.Origins{ProxyRef(p.Namespace, p.Name)}
	return out
}

// refuseHostOptOut warns that the host's opt-out of the global
// authorization (globalExtAuthDisabled, authPolicy.disabled) is refused:
// the configuration file forbids it, and the host's routes stay
// authorized.
func refuseHostOptOut(a *contourv1.AuthorizationServer, st *status.Object) {
	const where = authorizationWhere
	if a.GlobalExternalAuthorizationDisabled {
		st.AddWarning(contourv1.ConditionTypeAuthError, status.ReasonOptOutForbidden, where+".GlobalExtAuthDisabled is refused: the configuration file forbids opting out of the global authorization (globalExtAuth.optOut: forbidden); the host's routes stay authorized")
	}
	if a.AuthPolicy != nil && a.AuthPolicy.Disabled {
		st.AddWarning(contourv1.ConditionTypeAuthError, status.ReasonOptOutForbidden, where+".AuthPolicy.Disabled is refused: the configuration file forbids switching authorization off (globalExtAuth.optOut: forbidden); the host's routes stay authorized")
	}
}

// authorizationRefProblem says why a host may not have authorization of
// its own, or which extensionRef it cannot name ("" when it may).
func authorizationRefProblem(vh *contourv1.VirtualHost, secure bool) (reason, message string) {
	switch {
	case !secure:
		return status.ReasonAuthNotPermitted, "Spec.VirtualHost.Authorization requires Spec.VirtualHost.TLS: authorization of its own is only supported on HTTPS virtual hosts (HTTP virtual hosts use the global authorization of the configuration file, globalExtAuth)"
	case vh.TLS.EnableFallbackCertificate:
		return status.ReasonTLSIncompatibleFeatures, "Spec.VirtualHost.Authorization is incompatible with Spec.VirtualHost.TLS.EnableFallbackCertificate: the fallback certificate chain is shared by several virtual hosts"
	}
	return core.ExtensionRefProblem(vh.Authorization.ExtensionServiceRef, "Spec.VirtualHost.Authorization.ExtensionRef")
}

// routeAuth sets a route's authorization: the route's own policy replaces
// the enclosing "disabled" and merges over the enclosing context.
func routeAuth(rt *Route, r *contourv1.Route, scope authScope, errs *routeErrors) {
	disabled, ctx := scope.policy.Disabled, scope.policy.Context
	if ap := r.AuthPolicy; ap != nil {
		disabled = ap.Disabled
		ctx = maps.Clone(ctx)
		if ctx == nil {
			ctx = map[string]string{}
		}
		maps.Copy(ctx, ap.Context)
	}
	if !scope.enabled {
		return
	}
	routeAuthContextOverHTTP(r, scope, errs)
	// A host that opted out of global authorization has it off on every
	// route: its own HCM has no filter to turn back on.
	disabled = disabled || scope.optOut
	if disabled && scope.optOutForbidden {
		// Refused (the host's own refusal is said once, on the host).
		if r.AuthPolicy != nil && r.AuthPolicy.Disabled {
			errs.warn(contourv1.ConditionTypeAuthError, status.ReasonOptOutForbidden, "authPolicy.disabled is refused: the configuration file forbids switching authorization off (globalExtAuth.optOut: forbidden); the route stays authorized")
		}
		disabled = false
	}
	rt.AuthDisabled = disabled
	if !disabled && len(ctx) > 0 {
		rt.AuthContext = ctx
	}
	if scope.own && r.PermitInsecure && !disabled {
		errs.add(contourv1.ConditionTypeAuthError, status.ReasonAuthPermitInsecureNotDisabled, "permitInsecure requires authorization to be disabled on the route (authPolicy.disabled: true): its insecure copy on the HTTP listener would not be authorized")
	}
}

// withoutServer checks an authorization block without an extensionRef: it
// may only opt out of the global authorization or refine its policy. The
// settings of a server of the host's own (responseTimeout, failOpen,
// withRequestBody) have no server to apply to: errors, whatever the rest
// says (the global server's are the configuration file's). An opt-out
// with no global authorization has nothing to opt out of: a warning, the
// host is served as written.
func withoutServer(a *contourv1.AuthorizationServer, global, globalHTTP bool, st *status.Object) {
	serverSettingsWithoutRef(a, globalHTTP, st)
	ownSettings := ownServerSettings(a, st)
	globalAuthorizationUse(a, global, ownSettings, st)
}

// authorizationWhere names a host's authorization block in messages.
const authorizationWhere = "Spec.VirtualHost.Authorization"

// serverSettingsWithoutRef refuses the protocol settings of a server of
// the host's own, and context extensions the global HTTP server cannot
// take.
func serverSettingsWithoutRef(a *contourv1.AuthorizationServer, globalHTTP bool, st *status.Object) {
	const where = authorizationWhere
	if a.ServiceType != "" || a.HTTPServerSettings != nil {
		st.AddError(contourv1.ConditionTypeAuthError, status.ReasonExtensionServiceRefRequired, where+": serviceType and httpSettings configure the host's own authorization server, which needs extensionRef (the global authorization's are the configuration file's serviceAPIType and httpSettings)")
	}
	if globalHTTP && a.AuthPolicy != nil && !a.AuthPolicy.Disabled && len(a.AuthPolicy.Context) > 0 {
		st.AddError(contourv1.ConditionTypeAuthError, status.ReasonAuthContextNotSupported, where+".AuthPolicy.Context: the global authorization server is an HTTP one (serviceAPIType http), and context extensions exist only in the gRPC protocol")
	}
}

// ownServerSettings refuses the settings of a server of the host's own
// (responseTimeout, failOpen, withRequestBody) in one error; it reports
// whether any is set.
func ownServerSettings(a *contourv1.AuthorizationServer, st *status.Object) bool {
	const where = authorizationWhere
	var set []string
	if a.ResponseTimeout != "" {
		if _, err := apicheck.ParseTimeout(a.ResponseTimeout); err != nil {
			st.AddError(contourv1.ConditionTypeAuthError, status.ReasonAuthResponseTimeoutInvalid, fmt.Sprintf("%s.ResponseTimeout is invalid: %v", where, err))
		}
		set = append(set, "responseTimeout")
	}
	if a.FailOpen {
		set = append(set, "failOpen")
	}
	if a.WithRequestBody != nil {
		set = append(set, "withRequestBody")
	}
	if len(set) > 0 {
		st.AddError(contourv1.ConditionTypeAuthError, status.ReasonExtensionServiceRefRequired, fmt.Sprintf("%s: %s configure the host's own authorization server, which needs extensionRef (the global authorization's settings are in the configuration file)", where, strings.Join(set, ", ")))
	}
	return len(set) > 0
}

// globalAuthorizationUse checks what the block does with the global
// authorization: an opt-out or a policy with none configured is a
// warning or an error; a block that does nothing at all (and sets no
// server settings, already refused) needs an extensionRef.
func globalAuthorizationUse(a *contourv1.AuthorizationServer, global, ownSettings bool, st *status.Object) {
	const where = authorizationWhere
	disabled := a.AuthPolicy != nil && a.AuthPolicy.Disabled
	switch {
	case a.GlobalExternalAuthorizationDisabled && !global:
		st.AddWarning(contourv1.ConditionTypeAuthError, status.ReasonNoGlobalAuthorization, where+".GlobalExtAuthDisabled: no global authorization is configured (globalExtAuth): there is nothing to opt out of")
	case a.GlobalExternalAuthorizationDisabled, global && a.AuthPolicy != nil:
	case a.AuthPolicy == nil:
		if !ownSettings {
			st.AddError(contourv1.ConditionTypeAuthError, status.ReasonExtensionServiceRefRequired, where+".ExtensionRef.Name must be specified (or set globalExtAuthDisabled: true to opt out of global authorization, or an authPolicy to refine it)")
		}
	case disabled:
		st.AddWarning(contourv1.ConditionTypeAuthError, status.ReasonNoGlobalAuthorization, where+".AuthPolicy.Disabled: no global authorization is configured (globalExtAuth): there is nothing to opt out of")
	default:
		st.AddError(contourv1.ConditionTypeAuthError, status.ReasonExtensionServiceRefRequired, where+".AuthPolicy refines the global authorization, but none is configured (globalExtAuth): name an ExtensionRef for authorization of the host's own")
	}
}

// routeAuthContextOverHTTP refuses a route's own context when its
// authorization server is an HTTP one, which cannot receive it.
func routeAuthContextOverHTTP(r *contourv1.Route, scope authScope, errs *routeErrors) {
	if scope.http && r.AuthPolicy != nil && !r.AuthPolicy.Disabled && len(r.AuthPolicy.Context) > 0 {
		errs.add(contourv1.ConditionTypeAuthError, status.ReasonAuthContextNotSupported, "authPolicy.context: the authorization server is an HTTP one (serviceType http), and context extensions exist only in the gRPC protocol")
	}
}

// warnGlobalUnavailable adds the global filters' problems to the HTTPProxy
// that owns a route using them (a route that opted out is not affected).
func (b *rootBuilder) warnGlobalUnavailable(r ir.Route, scope authScope, st *status.Object) {
	if g := b.R.Global().AuthProblem; g != nil && scope.global && !r.AuthDisabled {
		st.AddWarning(g.Type, g.Reason, g.Message)
	}
	usesGlobalProc := scope.proc.effective != nil && !scope.proc.own &&
		(r.ExtProc == nil || (!r.ExtProc.Disabled && r.ExtProc.Overrides.Service == nil))
	if g := b.R.Global().ProcProblem; g != nil && usesGlobalProc {
		st.AddWarning(g.Type, g.Reason, g.Message)
	}
}
