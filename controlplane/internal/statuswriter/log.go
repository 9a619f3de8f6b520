package statuswriter

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Log is the writer of file mode: it logs each object's status when it
// changes.
type Log struct {
	Log  *slog.Logger
	last map[objects.Ref]string
}

// Write logs the statuses that changed since the last call.
func (l *Log) Write(_ context.Context, updates []Update) {
	if l.last == nil {
		l.last = map[objects.Ref]string{}
	}
	// updates may be only those that changed: objects missing from it
	// keep their last logged status.
	for _, u := range updates {
		summary := summarize(u)
		if l.last[u.Ref] == summary {
			continue
		}
		l.last[u.Ref] = summary
		l.Log.Info("status", "object", u.Ref.String(), "status", summary)
	}
}

// summarize is a stable one-line text of a status, ignoring timestamps:
// the fields of the Contour kinds' statuses, the conditions of every kind,
// a Gateway's (or ListenerSet's) listeners and attached ListenerSets, a
// route's parents and a policy's ancestors.
func summarize(u Update) string {
	b, _ := json.Marshal(u.Status())
	var generic struct {
		CurrentStatus string      `json:"currentStatus,omitempty"`
		Description   string      `json:"description,omitempty"`
		Conditions    []condition `json:"conditions"`
		Listeners     []struct {
			Name           string      `json:"name"`
			AttachedRoutes int32       `json:"attachedRoutes"`
			Conditions     []condition `json:"conditions"`
		} `json:"listeners,omitempty"`
		// AttachedListenerSets is a Gateway's.
		AttachedListenerSets *int32 `json:"attachedListenerSets,omitempty"`
		Parents              []struct {
			ParentRef  json.RawMessage `json:"parentRef"`
			Conditions []condition     `json:"conditions"`
		} `json:"parents,omitempty"`
		Ancestors []struct {
			AncestorRef json.RawMessage `json:"ancestorRef"`
			Conditions  []condition     `json:"conditions"`
		} `json:"ancestors,omitempty"`
	}
	// b is a status just marshalled: it decodes, and a partial decoding
	// would still be worth logging.
	_ = json.Unmarshal(b, &generic)
	out, _ := json.Marshal(generic)
	return string(out)
}

// condition is a condition of any kind without its times.
type condition struct {
	Type     string           `json:"type"`
	Status   string           `json:"status"`
	Reason   string           `json:"reason"`
	Message  string           `json:"message"`
	Errors   []status.Problem `json:"errors,omitempty"`
	Warnings []status.Problem `json:"warnings,omitempty"`
}
