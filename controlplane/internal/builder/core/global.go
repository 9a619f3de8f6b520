package core

import (
	"fmt"
	"maps"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Globals are the global authorization and processing of one build
// (Options.GlobalExtAuth and Options.GlobalExtProc, resolved).
type Globals struct {
	Auth       *ir.ExtAuth
	AuthPolicy contourv1.AuthorizationPolicy
	// authProblem, when set, is a warning for every HTTPProxy with a
	// route the global authorization applies to: its ExtensionService is
	// missing or invalid, and those routes fail closed (unless failOpen).
	AuthProblem *status.Problem

	Proc        *ir.ExtProc
	ProcProblem *status.Problem

	// rateLimit is the global rate limit service; rateLimitProblem, when
	// set, a warning for every HTTPProxy that sends it descriptors.
	RateLimit        *ir.RateLimitService
	RateLimitProblem *status.Problem
}

// BuildGlobalStage validates what every root depends on: the
// ExtensionServices, the TLSCertificateDelegations and the global
// authorization and processing. It completes snap with them (extensions,
// global) and returns its stage, whose output the roots' are merged into.
func BuildGlobalStage(snap *Snapshot, m *ir.Model) Stage {
	// Every root's findings are merged into this output: sized for every
	// HTTPProxy at once, not grown on every rebuild.
	n := len(snap.In.HTTPProxies) + len(snap.In.ExtensionServices)
	out := Output{Status: make(map[objects.Ref]*status.Object, n), order: make([]*status.Object, 0, n)}
	g := Stage{R: &Resolver{Snap: snap}, Out: &out}
	for _, es := range snap.In.ExtensionServices {
		snap.extensions[NsName(es.Namespace, es.Name)] = g.buildExtension(es)
	}
	g.buildDelegations()
	snap.Global = g.buildGlobals(m)
	return g
}

// buildGlobals resolves the global ExtensionServices. A missing or invalid
// one never makes the build fail and never opens traffic: the filter still
// points at the ExtensionService's cluster, kept without endpoints, so that
// Envoy answers 403 (ext_authz) or 500 (ext_proc) unless failOpen is set.
// The next build after the ExtensionService is fixed heals it.
func (b Stage) buildGlobals(m *ir.Model) (global Globals) {
	if g := b.R.Opts().GlobalExtAuth; g != nil {
		global.Auth, global.AuthProblem = b.globalAuth(g)
		if g.AuthPolicy != nil {
			global.AuthPolicy = *g.AuthPolicy
		}
		m.GlobalAuth = global.Auth
	}
	if g := b.R.Opts().GlobalExtProc; g != nil && !g.Disabled && g.Processor != nil {
		global.Proc, global.ProcProblem = b.globalProc(g.Processor)
		m.GlobalExtProc = global.Proc
	}
	if r := b.R.Opts().RateLimitService; r != nil {
		global.RateLimit, global.RateLimitProblem = b.globalRateLimitService(r)
	}
	return global
}

// globalAuth resolves globalExtAuth, with its problem when its
// ExtensionService cannot be used.
func (b Stage) globalAuth(g *config.GlobalExtAuth) (*ir.ExtAuth, *status.Problem) {
	ns, name := g.Ref()
	ext, _, msg := b.R.Extension(ns, name)
	a := &ir.ExtAuth{FailOpen: g.FailOpen, Timeout: DefaultAuthTimeout}
	var problem *status.Problem
	if ext != nil {
		a.Cluster, a.Authority = ext.Cluster.Name, ext.Authority
		if ext.Timeout != nil {
			a.Timeout = *ext.Timeout
		}
	} else {
		a.Cluster, a.Authority = b.unavailableCluster(ns, name), name+"."+ns
		problem = &status.Problem{Type: contourv1.ConditionTypeAuthError, Reason: status.ReasonGlobalExtAuthUnavailable,
			Message: fmt.Sprintf("global external authorization (configuration file, globalExtAuth): %s: requests are denied%s until it is fixed", msg, failOpenNote(g.FailOpen))}
	}
	if d, err := apicheck.ParseTimeout(g.ResponseTimeout); err == nil && d != nil {
		a.Timeout = *d
	}
	if w := g.WithRequestBody; w != nil {
		a.WithRequestBody = &ir.BufferSettings{MaxRequestBytes: max(w.MaxRequestBytes, 1), AllowPartialMessage: w.AllowPartialMessage, PackAsBytes: w.PackAsBytes}
	}
	a.HTTP = httpAuthService(g.ServiceAPIType, g.HTTPServerSettings)
	return a, problem
}

// globalProc resolves globalExtProc's processor, with its problem when its
// ExtensionService cannot be used.
func (b Stage) globalProc(processor *contourv1.ExtProc) (*ir.ExtProc, *status.Problem) {
	p, problem := ExtProc(b.R, processor, "", "globalExtProc.processor")
	if problem == "" {
		return p, nil
	}
	// The shape was checked when the file was read: normally only the
	// ExtensionService can be missing or invalid here.
	var ref contourv1.ExtensionServiceReference
	if processor.GRPCService != nil {
		ref = processor.GRPCService.ExtensionServiceRef
	}
	p.Cluster, p.Authority = b.unavailableCluster(ref.Namespace, ref.Name), ref.Name+"."+ref.Namespace
	return p, &status.Problem{Type: contourv1.ConditionTypeExtProcError, Reason: status.ReasonGlobalExtProcUnavailable,
		Message: fmt.Sprintf("global external processing (configuration file, globalExtProc): %s: requests fail%s until it is fixed", problem, failOpenNote(p.FailOpen))}
}

func failOpenNote(failOpen bool) string {
	if failOpen {
		return " (failOpen: they are let through unchecked)"
	}
	return ""
}

// unavailableCluster is the cluster of a missing or invalid
// ExtensionService: same name, no endpoints.
func (b Stage) unavailableCluster(namespace, name string) string {
	return b.Out.AddCluster(newCluster(ExtensionClusterName(namespace, name), nil, nil, ir.H2C, nil, "", nil)).Name
}

// MergePolicy refines an outer authorization policy with an inner one: the
// inner "disabled" wins when the inner policy is present, contexts merge
// with inner keys winning.
func MergePolicy(outer contourv1.AuthorizationPolicy, inner *contourv1.AuthorizationPolicy) contourv1.AuthorizationPolicy {
	if inner == nil {
		return outer
	}
	out := contourv1.AuthorizationPolicy{Disabled: inner.Disabled, Context: maps.Clone(outer.Context)}
	if len(inner.Context) > 0 {
		if out.Context == nil {
			out.Context = map[string]string{}
		}
		maps.Copy(out.Context, inner.Context)
	}
	return out
}
