package serve

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// The reasons of portcullis_config_file_not_applied.
const (
	// configInvalid: the file cannot be read or is invalid.
	configInvalid = "invalid"
	// configLostSection: the file lacks a global authorization or
	// processing in force (config.LostSectionError).
	configLostSection = "lost_section"
)

// newConfigFileGauge is portcullis_config_file_not_applied, every reason
// at zero.
func newConfigFileGauge() *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "portcullis_config_file_not_applied",
		Help: "1 while the configuration file on disk is not in force, by reason: invalid (unreadable or invalid) or lost_section (it lacks a global authorization or processing in force without disabling it explicitly); the last good configuration stays in force.",
	}, []string{"reason"})
	g.WithLabelValues(configInvalid)
	g.WithLabelValues(configLostSection)
	return g
}

// configFileProblem records why the configuration file is not in force
// (nil: it is), for /status and the metric.
func (s *Server) configFileProblem(err error) {
	msg, reason := "", ""
	var lost *config.LostSectionError
	switch {
	case errors.As(err, &lost):
		msg, reason = err.Error(), configLostSection
	case err != nil:
		msg, reason = err.Error(), configInvalid
	}
	s.mu.Lock()
	s.configErr = msg
	s.mu.Unlock()
	for _, r := range []string{configInvalid, configLostSection} {
		v := 0.0
		if r == reason {
			v = 1
		}
		s.metrics.configFile.WithLabelValues(r).Set(v)
	}
}
