package serve

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestReportGlobal(t *testing.T) {
	s := &Server{cfg: Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, metrics: newMetrics(nil, nil)}
	for _, tc := range []struct {
		name        string
		unavailable []status.Problem
		want        [3]float64 // ext_authz, ext_proc, tracing
	}{
		{"all unavailable", []status.Problem{
			{Reason: status.ReasonGlobalExtAuthUnavailable, Message: "auth"},
			{Reason: status.ReasonGlobalExtProcUnavailable, Message: "proc"},
			{Reason: status.ReasonTracingUnavailable, Message: "tracing"},
		}, [3]float64{1, 1, 1}},
		{"healed", nil, [3]float64{0, 0, 0}},
		{"ext_authz only", []status.Problem{{Reason: status.ReasonGlobalExtAuthUnavailable}}, [3]float64{1, 0, 0}},
		{"tracing only", []status.Problem{{Reason: status.ReasonTracingUnavailable}}, [3]float64{0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.reportGlobal(tc.unavailable)
			got := [3]float64{
				testutil.ToFloat64(globalGauge.gauge.WithLabelValues("ext_authz")),
				testutil.ToFloat64(globalGauge.gauge.WithLabelValues("ext_proc")),
				testutil.ToFloat64(globalGauge.gauge.WithLabelValues("tracing")),
			}
			if got != tc.want {
				t.Errorf("gauge (ext_authz, ext_proc, tracing) = %v, want %v", got, tc.want)
			}
		})
	}
	// The gauge is served with the other metrics.
	n, err := testutil.GatherAndCount(s.metrics.registry, "portcullis_global_filter_unavailable")
	if err != nil || n != 3 {
		t.Errorf("registry has %d series of portcullis_global_filter_unavailable (%v), want 3", n, err)
	}
}
