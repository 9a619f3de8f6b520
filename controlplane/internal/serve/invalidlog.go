package serve

import (
	"log/slog"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// maxInvalidLogged bounds the warnings of one build: a bad rollout of a
// thousand objects says so in a summary, not a thousand lines.
const maxInvalidLogged = 20

// newlyInvalid returns the objects of statuses that are not valid, and
// those of them that were valid (or absent) in the build whose invalid
// objects were prev: what an operator must hear about now, at WARN, rather
// than in the INFO count every build repeats.
func newlyInvalid(prev map[objects.Ref]bool, statuses []*status.Object) (invalid map[objects.Ref]bool, newly []*status.Object) {
	invalid = map[objects.Ref]bool{}
	for _, o := range statuses {
		if o.Valid() {
			continue
		}
		invalid[o.Ref] = true
		if !prev[o.Ref] {
			newly = append(newly, o)
		}
	}
	return invalid, newly
}

// warnInvalid logs each newly invalid object with why (its first error, or
// that it is orphaned), at most maxInvalidLogged of them.
func warnInvalid(log *slog.Logger, newly []*status.Object) {
	for i, o := range newly {
		if i == maxInvalidLogged {
			log.Warn("more objects became invalid: see their status or /status", "more", len(newly)-i)
			return
		}
		why, reason := "not included by any valid root HTTPProxy (orphaned)", "Orphaned"
		if len(o.Errors) > 0 {
			why, reason = o.Errors[0].Message, o.Errors[0].Reason
		}
		log.Warn("object became invalid: it is not served", "kind", o.Ref.Kind, "namespace", o.Ref.Namespace, "name", o.Ref.Name,
			"reason", reason, "error", why, "errors", len(o.Errors))
	}
}
