package observe

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The metrics the docs name exist from the start, one series per label
// value, before any request.
func TestMetricsRegisteredAtStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"portcullis_extprocserver_upstream_seconds": len(codeClasses),
		"portcullis_extprocserver_body_bytes":       2,
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series at start (%v), want %d", name, n, err, want)
		}
	}
	// codeClasses holds every value codeClass can return.
	for _, s := range []string{"100", "204", "302", "404", "503", "", "600", "abc"} {
		if c := codeClass(s); !slices.Contains(codeClasses, c) {
			t.Errorf("codeClass(%q) = %q, not in codeClasses", s, c)
		}
	}
}
