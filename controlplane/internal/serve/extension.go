package serve

import (
	"context"
	"fmt"
	"net/http"

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

// applyExtension runs the extensions' hooks on a build's resources. It
// returns the build with the resources to publish, or nil when an
// extension whose failure policy is Closed failed (keep the last published
// configuration), and the ExtensionError problems of the failures, by
// object, and whether any hook call failed (also one with no object to
// blame). Without extensions it returns res as it is.
func (s *Server) applyExtension(ctx context.Context, res *pipeline.Result) (*pipeline.Result, map[objects.Ref][]extProblem, bool) {
	if s.ext == nil {
		return res, nil, false
	}
	run := extstage.Run(ctx, s.ext, res)
	for _, reg := range run.Unreachable {
		s.cfg.Log.Warn("extension server unreachable: its ExtensionService is missing, invalid or has no ready endpoints",
			"extension", reg.Name, "extensionService", reg.Service)
	}
	s.reportIdleExtensions()
	after, failures := run.After, run.Failures
	s.mu.Lock()
	s.lastExt = run
	s.mu.Unlock()
	problems := map[objects.Ref][]extProblem{}
	for _, f := range failures {
		p := extProblem{problem: extensionProblem(f), closed: f.Policy == extension.FailClosed}
		refs := make([]string, len(f.Origins))
		for i, ref := range f.Origins {
			problems[ref] = append(problems[ref], p)
			refs[i] = ref.String()
		}
		log := s.cfg.Log.Warn
		if p.closed {
			log = s.cfg.Log.Error
		}
		log("extension hook failed", "extension", f.Extension, "hook", f.Hook, "resource", f.Resource, "outcome", f.Outcome,
			"code", f.Code.String(), "error", f.Message, "failurePolicy", f.Policy, "objects", refs)
	}
	return after, problems, len(failures) > 0
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

// serveExtensions serves, as text, what the extensions changed in the
// last build (a unified diff of each listener, virtual host, cluster and
// secret's YAML, resources added and removed) and their failures: the
// same as `portcullis translate --show-extension-diff`, for the chain as a
// whole. Computed on demand.
func (s *Server) serveExtensions(w http.ResponseWriter, _ *http.Request) {
	if s.ext == nil {
		http.Error(w, "no extensions registered (the --config file's extensions: section)", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	run := s.lastExt
	s.mu.Unlock()
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

// reportIdleExtensions logs, when it changes, which extensions the last
// rebuild did not call at all, and sets their idle gauge.
func (s *Server) reportIdleExtensions() {
	for _, r := range s.ext.Runners() {
		name := r.Registration().Name
		idle := r.Idle()
		v := 0.0
		if idle {
			v = 1
		}
		s.metrics.extIdle.WithLabelValues(name).Set(v)
		if was, seen := s.extIdle[name]; seen && was == idle {
			continue
		}
		s.extIdle[name] = idle
		if idle {
			s.cfg.Log.Warn("extension registered but not called: no hook it answers had anything to do in this rebuild (e.g. no route references its kinds)",
				"extension", name, "hooks", r.Registration().Hooks, "kinds", r.Registration().Kinds())
		} else {
			s.cfg.Log.Info("extension called", "extension", name)
		}
	}
}

// closeExtensions releases the extensions' connections.
func (s *Server) closeExtensions() {
	if s.closeConns != nil {
		s.closeConns()
		s.closeConns = nil
	}
}
