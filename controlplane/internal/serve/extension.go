package serve

import (
	"context"
	"fmt"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// applyExtension runs the extension's hooks on a build's resources. It
// returns the build with the resources to publish, or nil when the
// extension failed under failurePolicy Closed (keep the last published
// configuration), and the ExtensionError problems of the failures, by
// object. Without an extension it returns res as it is.
//
// No route references resources of the extension yet (ExtensionRefs is
// empty): PostRouteModify needs the extension's kinds watched, which the
// providers do not do.
func (s *Server) applyExtension(ctx context.Context, res *pipeline.Result) (*pipeline.Result, map[objects.Ref][]status.Problem) {
	if s.ext == nil {
		return res, nil
	}
	out, failures := s.ext.Apply(ctx, res.Resources, nil)
	policy := s.ext.Registration().FailurePolicy
	problems := map[objects.Ref][]status.Problem{}
	for _, f := range failures {
		p := extensionProblem(f, policy)
		refs := make([]string, len(f.Origins))
		for i, ref := range f.Origins {
			problems[ref] = append(problems[ref], p)
			refs[i] = ref.String()
		}
		log := s.cfg.Log.Warn
		if policy == extension.FailClosed {
			log = s.cfg.Log.Error
		}
		log("extension hook failed", "hook", f.Hook, "resource", f.Resource, "outcome", f.Outcome, "code", f.Code.String(),
			"error", f.Message, "failurePolicy", policy, "objects", refs)
	}
	if out == nil {
		return nil, problems
	}
	return &pipeline.Result{Build: res.Build, Resources: out}, problems
}

// extensionProblem is the ExtensionError of one failed hook call.
func extensionProblem(f extension.Failure, policy extension.FailurePolicy) status.Problem {
	msg := f.Message
	if len(msg) > maxEnvoyMessage {
		msg = msg[:maxEnvoyMessage] + "..."
	}
	then := "failurePolicy Open: served without the hook's change"
	if policy == extension.FailClosed {
		then = "failurePolicy Closed: the last good configuration stays published"
	}
	return status.Problem{
		Type:   status.TypeExtensionError,
		Reason: status.ReasonExtensionHookFailed,
		Message: fmt.Sprintf("extension hook %s failed for %s (%s, gRPC code %s): %s; %s",
			f.Hook, f.Resource, f.Outcome, f.Code, msg, then),
	}
}

// withExtensionProblems returns objs with their ExtensionError problems:
// errors when closed, warnings otherwise. objs itself is not modified.
func withExtensionProblems(objs []*status.Object, problems map[objects.Ref][]status.Problem, closed bool) []*status.Object {
	if len(problems) == 0 {
		return objs
	}
	out := make([]*status.Object, len(objs))
	for i, o := range objs {
		out[i] = o
		ps := problems[o.Ref]
		switch {
		case len(ps) == 0:
		case closed:
			out[i] = o.WithErrors(ps...)
		default:
			out[i] = o.WithWarnings(ps...)
		}
	}
	return out
}
