package serve

import (
	"context"
	"fmt"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
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
// object. Without extensions it returns res as it is.
func (s *Server) applyExtension(ctx context.Context, res *pipeline.Result) (*pipeline.Result, map[objects.Ref][]extProblem) {
	if s.ext == nil {
		return res, nil
	}
	out, failures := s.ext.Apply(ctx, res.Resources, extension.RefsOf(res.Build.Model))
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
	if out == nil {
		return nil, problems
	}
	return &pipeline.Result{Build: res.Build, Resources: out}, problems
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

// closeExtensions releases the extensions' connections.
func (s *Server) closeExtensions() {
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
}
