package httpproxy

import (
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestOverridesProblem(t *testing.T) {
	withProcessor := procScope{effective: &ir.ExtProc{Cluster: "extension/ns/proc"}}
	for _, tc := range []struct {
		name  string
		o     contourv1.ExtProc
		scope procScope
		want  string // the reason
	}{
		{"a mode override", contourv1.ExtProc{ProcessingMode: &contourv1.ProcessingMode{RequestBodyMode: "BUFFERED"}}, withProcessor, ""},
		{"nothing to override", contourv1.ExtProc{}, procScope{}, status.ReasonExtProcOverridesWithoutProcessor},
		{"mutation rules", contourv1.ExtProc{MutationRules: &contourv1.HeaderMutationRules{}}, withProcessor, status.ReasonExtProcOverridesInvalid},
		{"allowModeOverride", contourv1.ExtProc{AllowModeOverride: true}, withProcessor, status.ReasonExtProcOverridesInvalid},
		{"an invalid mode", contourv1.ExtProc{ProcessingMode: &contourv1.ProcessingMode{RequestBodyMode: "SOMETIMES"}}, withProcessor, status.ReasonExtProcOverridesInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, msg := overridesProblem(&tc.o, tc.scope); got != tc.want || (got == "") != (msg == "") {
				t.Errorf("reason %q (%q), want %q", got, msg, tc.want)
			}
		})
	}
}
