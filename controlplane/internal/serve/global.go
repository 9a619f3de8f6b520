package serve

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// globalGauge reports whether the global authorization / processing of the
// configuration file is unavailable (its ExtensionService missing or
// invalid, so its routes fail closed): portcullis_global_filter_unavailable.
var globalGauge = struct {
	once  sync.Once
	gauge *prometheus.GaugeVec
}{}

// reportGlobal logs and exports the state of the global filters after a
// build. The HTTPProxies concerned carry the same problem as a warning.
func (s *Server) reportGlobal(unavailableFilters []status.Problem) {
	globalGauge.once.Do(func() {
		globalGauge.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "portcullis_global_filter_unavailable",
			Help: "1 when the global ext_authz or ext_proc filter (configuration file) has no usable ExtensionService and fails closed (or open with failOpen); for tracing, when the collector's has none and Envoy's spans are dropped.",
		}, []string{"filter"})
	})
	if s.metrics != nil {
		// Registering twice (a second Server in the same process) is
		// harmless: the error only says it is already there.
		_ = s.metrics.registry.Register(globalGauge.gauge)
	}
	unavailable := map[string]float64{"ext_authz": 0, "ext_proc": 0, "tracing": 0}
	for _, p := range unavailableFilters {
		filter := "ext_authz"
		switch p.Reason {
		case status.ReasonGlobalExtProcUnavailable:
			filter = "ext_proc"
		case status.ReasonTracingUnavailable:
			filter = "tracing"
		}
		unavailable[filter] = 1
		s.cfg.Log.Warn("global filter unavailable", "filter", filter, "problem", p.Message)
	}
	for f, v := range unavailable {
		globalGauge.gauge.WithLabelValues(f).Set(v)
	}
}
