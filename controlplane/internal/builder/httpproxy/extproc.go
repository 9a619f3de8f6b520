package httpproxy

import (
	"fmt"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// procScope is the external processing in force where routes are being
// built.
type procScope struct {
	// effective is the processor of the host's routes (its own, or the
	// global one); nil for none.
	effective *ir.ExtProc
	// own is set when the host has a processor of its own.
	own bool
	// disabled: the host switched processing off (virtualhost.extProc
	// disabled: true); its routes on shared HCMs are switched off too.
	disabled bool
}

// hostExtProc validates spec.virtualhost.extProc and computes the
// processing of the host's routes:
//
//	extProc unset, or disabled: false without processor -> the global processor
//	disabled: false with processor                      -> the host's processor
//	disabled: true (with or without processor)          -> none
//
// Only TLS hosts may set extProc: on the HTTP listener every host shares
// one HCM, so one host cannot have a processor of its own.
func (b *rootBuilder) hostExtProc(p *contourv1.HTTPProxy, secure bool, st *status.Object) procScope {
	e := p.Spec.VirtualHost.ExtProc
	global := procScope{effective: b.R.Global().Proc}
	if e == nil {
		return global
	}
	const where = "Spec.VirtualHost.ExtProc"
	fail := func(reason, format string, args ...any) procScope {
		st.AddError(contourv1.ConditionTypeExtProcError, reason, fmt.Sprintf(format, args...))
		return procScope{}
	}
	if !secure {
		return fail(status.ReasonExtProcNotPermitted, "%s requires Spec.VirtualHost.TLS: per-virtual-host external processing is only supported on HTTPS virtual hosts (the HTTP listener's hosts share the global processor)", where)
	}
	if errs := apicheck.CheckExtProc(e.Processor, where+".Processor", true); len(errs) > 0 {
		return fail(status.ReasonExtProcInvalid, "%s", strings.Join(errs, "; "))
	}
	if e.Disabled {
		return procScope{disabled: true}
	}
	if e.Processor == nil {
		return global
	}
	if p.Spec.VirtualHost.TLS.EnableFallbackCertificate {
		return fail(status.ReasonExtProcIncompatibleWithFallback, "%s.Processor is incompatible with Spec.VirtualHost.TLS.EnableFallbackCertificate: the fallback certificate chain is shared by several virtual hosts and uses the global processor", where)
	}
	proc, problem := core.ExtProc(b.R, e.Processor, p.Namespace, where+".Processor")
	if problem != "" {
		return fail(status.ReasonExtProcExtensionServiceUnavailable, "%s.Processor.GRPCService.ExtensionRef: %s", where, problem)
	}
	proc.Origins = ir.Origins{ProxyRef(p.Namespace, p.Name)}
	return procScope{effective: proc, own: true}
}

// routeExtProc computes a route's ext_proc setting from its extProcPolicy
// (docs/design/decisions.md):
//
//	no policy, or disabled: false without overrides -> inherit (nil)
//	disabled: true                                  -> off
//	disabled: false with overrides                  -> the overrides
//
// Under a host that disabled processing, every route is off. Overrides need
// a processor to override.
func (b *rootBuilder) routeExtProc(p *contourv1.HTTPProxy, r *contourv1.Route, scope procScope, fail func(typ, reason, format string, args ...any)) *ir.ExtProcPerRoute {
	pol := r.ExtProcPolicy
	if pol != nil && pol.Disabled {
		return &ir.ExtProcPerRoute{Disabled: true}
	}
	if pol == nil || pol.Overrides == nil {
		if scope.disabled {
			return &ir.ExtProcPerRoute{Disabled: true}
		}
		return nil
	}
	o := pol.Overrides
	if reason, msg := overridesProblem(o, scope); reason != "" {
		fail(contourv1.ConditionTypeExtProcError, reason, "%s", msg)
		return nil
	}
	out := &ir.ExtProcOverrides{Mode: core.ProcessingMode(o.ProcessingMode)}
	if g := o.GRPCService; g != nil {
		svc, reason, msg := b.overrideService(p, g, *scope.effective)
		if reason != "" {
			fail(contourv1.ConditionTypeExtProcError, reason, "%s", msg)
			return nil
		}
		if g.FailOpen != scope.effective.FailOpen {
			out.FailOpen = &g.FailOpen
		}
		out.Service = svc
	}
	return &ir.ExtProcPerRoute{Overrides: out}
}

// overridesWhere names a route's overrides in messages.
const overridesWhere = "ExtProcPolicy.Overrides"

// overridesProblem says why a route's ext_proc overrides are invalid (""
// when they are not): they need a processor to override, and may only
// change the service and the processing mode.
func overridesProblem(o *contourv1.ExtProc, scope procScope) (reason, message string) {
	const where = overridesWhere
	switch {
	case scope.effective == nil:
		return status.ReasonExtProcOverridesWithoutProcessor, where + ": there is no external processor to override: neither the virtual host nor the global configuration sets one (or the virtual host disabled it)"
	case o.MutationRules != nil:
		return status.ReasonExtProcOverridesInvalid, where + ".MutationRules cannot be overridden per route: set them on the virtual host or global processor"
	case o.AllowModeOverride:
		return status.ReasonExtProcOverridesInvalid, where + ".AllowModeOverride cannot be overridden per route: set it on the virtual host or global processor"
	}
	if errs := apicheck.CheckExtProc(o, where, false); len(errs) > 0 {
		return status.ReasonExtProcOverridesInvalid, strings.Join(errs, "; ")
	}
	return "", ""
}

// overrideService is the processor service of a route's overrides: the
// inherited one with the route's timeout, or another ExtensionService
// (which only the root may name).
func (b *rootBuilder) overrideService(p *contourv1.HTTPProxy, g *contourv1.GRPCService, svc ir.ExtProc) (out *ir.ExtProc, reason, message string) {
	const where = overridesWhere
	if g.ExtensionServiceRef.Name == "" {
		if d, err := apicheck.ParseTimeout(g.ResponseTimeout); err == nil && d != nil {
			svc.Timeout = d
		}
		return &svc, "", ""
	}
	// A processor runs after ext_authz and may clear the route cache:
	// Envoy then routes the request again, without a second check,
	// possibly onto a route this HTTPProxy does not own. Only the virtual
	// host's owner may pick one.
	if p.Spec.VirtualHost == nil {
		return nil, status.ReasonExtProcServiceNotPermitted, where + ".GRPCService.ExtensionRef: only the root HTTPProxy may name a processor for its routes (a processor runs after authorization and can route the request again, onto routes this HTTPProxy does not own)"
	}
	svc.Cluster, svc.Authority, svc.Timeout = "", "", nil
	if problem := core.ResolveProcessorService(b.R, &svc, g, p.Namespace); problem != "" {
		return nil, status.ReasonExtProcExtensionServiceUnavailable, fmt.Sprintf("%s.GRPCService.ExtensionRef: %s", where, problem)
	}
	svc.Origins = ir.Origins{ProxyRef(p.Namespace, p.Name)}
	b.Out.ClusterUses.Add(svc.Cluster, svc.Origins[0])
	return &svc, "", ""
}

// sharedExtProc adapts the routes of a TLS host for the HCMs it shares with
// other hosts (its insecure copy on the HTTP listener, the fallback chain),
// whose ext_proc filter is the global one: a host with its own processor
// overrides the service and mode of that filter on its routes.
func sharedExtProc(routes []*ir.Route, scope procScope) []*ir.Route {
	if !scope.own {
		return routes
	}
	failOpen := scope.effective.FailOpen
	for _, r := range routes {
		switch {
		case r.HTTPSRedirect:
		case r.ExtProc == nil:
			r.ExtProc = &ir.ExtProcPerRoute{Overrides: &ir.ExtProcOverrides{Service: scope.effective, FailOpen: &failOpen, Mode: scope.effective.Mode}}
		case r.ExtProc.Overrides != nil:
			// The route's overrides are relative to the host's processor:
			// fill in what they inherit from it.
			o := *r.ExtProc.Overrides
			if o.Service == nil {
				o.Service = scope.effective
			}
			if o.FailOpen == nil {
				o.FailOpen = &failOpen
			}
			if o.Mode == nil {
				o.Mode = scope.effective.Mode
			}
			r.ExtProc = &ir.ExtProcPerRoute{Overrides: &o}
		}
	}
	return routes
}
