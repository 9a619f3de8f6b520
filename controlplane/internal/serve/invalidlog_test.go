package serve

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestNewlyInvalid: an object is logged at WARN in the build that finds it
// invalid, not again while it stays so, and again if it becomes invalid
// after being fixed; past maxInvalidLogged a summary says how many more.
func TestNewlyInvalid(t *testing.T) {
	bad := func(name, msg string) *status.Object {
		return &status.Object{Ref: objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: name}, Errors: []status.Problem{{Type: "Valid", Reason: "Bad", Message: msg}}}
	}
	good := func(name string) *status.Object {
		return &status.Object{Ref: objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: name}}
	}
	var prev map[objects.Ref]bool
	for _, step := range []struct {
		name     string
		statuses []*status.Object
		want     []string
	}{
		{"first build", []*status.Object{bad("a", "no secret"), good("b")}, []string{"a"}},
		{"a still invalid", []*status.Object{bad("a", "no secret"), good("b")}, nil},
		{"b breaks", []*status.Object{bad("a", "no secret"), bad("b", "no service")}, []string{"b"}},
		{"a fixed", []*status.Object{good("a"), bad("b", "no service")}, nil},
		{"a breaks again", []*status.Object{bad("a", "no secret"), bad("b", "no service")}, []string{"a"}},
	} {
		var newly []*status.Object
		prev, newly = newlyInvalid(prev, step.statuses)
		var got []string
		for _, o := range newly {
			got = append(got, o.Ref.Name)
		}
		if strings.Join(got, ",") != strings.Join(step.want, ",") {
			t.Errorf("%s: newly invalid %v, want %v", step.name, got, step.want)
		}
	}

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	many := make([]*status.Object, maxInvalidLogged+5)
	for i := range many {
		many[i] = bad("p", "no service")
	}
	warnInvalid(log, many)
	out := buf.String()
	if n := strings.Count(out, "level=WARN msg=\"object became invalid"); n != maxInvalidLogged {
		t.Errorf("%d objects logged, want %d:\n%s", n, maxInvalidLogged, out)
	}
	if !strings.Contains(out, "more=5") || !strings.Contains(out, `error="no service"`) || !strings.Contains(out, "reason=Bad") {
		t.Errorf("the warnings lack the summary or the reason:\n%s", out)
	}
}
