package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/controlplane/internal/extdiff"
	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/extstage"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// extProblem is the ExtensionError of one failed hook call on one object:
// an error when the extension's failure policy is Closed (the object is
// not served as it is now), a warning when Open.
type extProblem struct {
	problem status.Problem
	closed  bool
}

// extensions are serve's registered extension servers: the chain the
// extension hook stage (extstage.Run) runs on every rebuild, its
// connections, and what the admin endpoint and the logs say of its runs.
// Everything else a Server does is serving; this is calling out. A nil
// *extensions is none registered.
type extensions struct {
	chain *extension.Chain
	// closeConns releases the extensions' connections.
	closeConns func()
	log        *slog.Logger
	// idleGauge is portcullis' idle gauge, by extension.
	idleGauge *prometheus.GaugeVec
	// idle is whether each extension was idle in the last rebuild
	// (reportIdle logs the changes; loop goroutine only).
	idle map[string]bool

	mu sync.Mutex
	// last is the last run of the stage (the admin endpoint's
	// /extensions); nil before the first build.
	last *extstage.Result
}

// newExtensions connects (lazily) to the registered extensions and
// registers their metric; nil without any.
func newExtensions(regs []extension.Registration, log *slog.Logger, m *metrics) (*extensions, error) {
	if len(regs) == 0 {
		return nil, nil
	}
	chain, closeConns, err := extension.Connect(regs)
	if err != nil {
		return nil, err
	}
	m.registry.MustRegister(chain.Collector())
	for _, r := range chain.Runners() {
		reg := r.Registration()
		log.Info("extension server registered", "name", reg.Name, "address", reg.Address, "hooks", reg.Hooks,
			"kinds", reg.Kinds(), "failurePolicy", reg.FailurePolicy, "timeout", reg.Timeout, "phaseBudget", reg.PhaseBudget)
	}
	return &extensions{chain: chain, closeConns: closeConns, log: log, idleGauge: m.extIdle, idle: map[string]bool{}}, nil
}

// apply runs the extension hook stage on a build's resources. It
// returns the build with the resources to publish, or nil when an
// extension whose failure policy is Closed failed (keep the last published
// configuration), and the ExtensionError problems of the failures, by
// object, and whether any hook call failed (also one with no object to
// blame). Without extensions it returns res as it is.
func (e *extensions) apply(ctx context.Context, set *objects.Set, res *pipeline.Result) (*pipeline.Result, map[objects.Ref][]extProblem, bool) {
	if e == nil {
		return res, nil, false
	}
	run := extstage.Run(ctx, e.chain, res, extstage.SecretsOf(set))
	for _, reg := range run.Unreachable {
		e.log.Warn("extension server unreachable: its ExtensionService is missing, invalid or has no ready endpoints",
			"extension", reg.Name, "extensionService", reg.Service)
	}
	e.reportIdle()
	e.mu.Lock()
	e.last = run
	e.mu.Unlock()
	problems := map[objects.Ref][]extProblem{}
	for _, f := range run.Failures {
		p := extProblem{problem: extensionProblem(f), closed: f.Policy == extension.FailClosed}
		refs := make([]string, len(f.Origins))
		for i, ref := range f.Origins {
			problems[ref] = append(problems[ref], p)
			refs[i] = ref.String()
		}
		log := e.log.Warn
		if p.closed {
			log = e.log.Error
		}
		log("extension hook failed", "extension", f.Extension, "hook", f.Hook, "resource", f.Resource, "outcome", f.Outcome,
			"code", f.Code.String(), "error", f.Message, "failurePolicy", f.Policy, "objects", refs)
	}
	return run.After, problems, len(run.Failures) > 0
}

// touched is the chain's Touched, for Envoy's rejections; nil without
// extensions.
func (e *extensions) touched() func(typeURL, name string) []string {
	if e == nil {
		return nil
	}
	return e.chain.Touched
}

// extensionProblem is the ExtensionError of one failed hook call.
func extensionProblem(f extension.Failure) status.Problem {
	msg := f.Message
	if len(msg) > maxEnvoyMessage {
		msg = msg[:maxEnvoyMessage] + "..."
	}
	then := "failurePolicy Open: served without the hook's change"
	if f.Policy == extension.FailClosed {
		then = "failurePolicy Closed: the last good configuration stays published"
	}
	return status.Problem{
		Type:   status.TypeExtensionError,
		Reason: status.ReasonExtensionHookFailed,
		Message: fmt.Sprintf("extension %q: hook %s failed for %s (%s, gRPC code %s): %s; %s",
			f.Extension, f.Hook, f.Resource, f.Outcome, f.Code, msg, then),
	}
}

// withExtensionProblems returns objs with their ExtensionError problems:
// errors when closed, warnings otherwise. objs itself is not modified.
func withExtensionProblems(objs []*status.Object, problems map[objects.Ref][]extProblem) []*status.Object {
	if len(problems) == 0 {
		return objs
	}
	out := make([]*status.Object, len(objs))
	for i, o := range objs {
		out[i] = o
		var errs, warns []status.Problem
		for _, p := range problems[o.Ref] {
			if p.closed {
				errs = append(errs, p.problem)
			} else {
				warns = append(warns, p.problem)
			}
		}
		if len(errs) > 0 {
			out[i] = out[i].WithErrors(errs...)
		}
		if len(warns) > 0 {
			out[i] = out[i].WithWarnings(warns...)
		}
	}
	return out
}

// serveHTTP serves, as text, what the extensions changed in the
// last build (a unified diff of each listener, virtual host, cluster and
// secret's YAML, resources added and removed) and their failures: the
// same as `portcullis translate --show-extension-diff`, for the chain as a
// whole. Computed on demand.
func (e *extensions) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	if e == nil {
		http.Error(w, "no extensions registered (the --config file's extensions: section)", http.StatusNotFound)
		return
	}
	e.mu.Lock()
	run := e.last
	e.mu.Unlock()
	if run == nil {
		http.Error(w, "no build yet", http.StatusServiceUnavailable)
		return
	}
	var changes []extdiff.Change
	if run.After != nil {
		var err error
		if changes, err = extdiff.Diff(run.Before.Resources, run.After.Resources); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// Its only error is the write's: the client gone, with the status
	// sent, has no one left to tell.
	_ = extdiff.WriteChain(w, changes, run.Failures, run.After == nil)
}

// reportIdle logs, when it changes, which extensions the last rebuild did
// not call at all, and sets their idle gauge.
func (e *extensions) reportIdle() {
	for _, r := range e.chain.Runners() {
		name := r.Registration().Name
		idle := r.Idle()
		v := 0.0
		if idle {
			v = 1
		}
		e.idleGauge.WithLabelValues(name).Set(v)
		if was, seen := e.idle[name]; seen && was == idle {
			continue
		}
		e.idle[name] = idle
		if idle {
			e.log.Warn("extension registered but not called: no hook it answers had anything to do in this rebuild (e.g. no route references its kinds)",
				"extension", name, "hooks", r.Registration().Hooks, "kinds", r.Registration().Kinds())
		} else {
			e.log.Info("extension called", "extension", name)
		}
	}
}

// watchReady watches the extensions' connections until ctx ends: ready
// receives (it holds one at most) when one became ready again, e.g. its
// server restarted after calls failed. wait returns once the watching
// goroutines have (after ctx ended, or the connections closed). Without
// extensions ready never receives.
func (e *extensions) watchReady(ctx context.Context) (ready <-chan struct{}, wait func()) {
	if e == nil {
		return nil, func() {}
	}
	c := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for _, r := range e.chain.Runners() {
		wg.Go(func() {
			r.WatchReady(ctx, func() {
				select {
				case c <- struct{}{}:
				default:
				}
			})
		})
	}
	return c, wg.Wait
}

// close releases the extensions' connections.
func (e *extensions) close() {
	if e != nil && e.closeConns != nil {
		e.closeConns()
		e.closeConns = nil
	}
}
