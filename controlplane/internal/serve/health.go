package serve

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// The health of the control plane as the dashboards and alerts read it
// (docs/monitoring.md): the objects by kind and status, whether builds
// fail, and how far the xDS clients are behind.

// Object statuses counted by portcullis_objects.
const (
	objectValid    = "valid"
	objectInvalid  = "invalid"
	objectOrphaned = "orphaned" // no errors of its own, but no valid root includes it
)

var objectStatuses = []string{objectValid, objectInvalid, objectOrphaned}

func newObjectsGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "portcullis_objects",
		Help: "Objects of the last build, by kind and status (valid, invalid, orphaned).",
	}, []string{"kind", "status"})
}

// countObjects sets g to the statuses of a build: every status of each
// kind present, zero included, so that a ratio of invalid objects has a
// denominator; kinds no longer present go.
func countObjects(g *prometheus.GaugeVec, statuses []*status.Object) {
	counts := map[string]map[string]int{}
	for _, o := range statuses {
		byStatus := counts[o.Ref.Kind]
		if byStatus == nil {
			byStatus = map[string]int{}
			counts[o.Ref.Kind] = byStatus
		}
		switch {
		case len(o.Errors) > 0:
			byStatus[objectInvalid]++
		case o.Orphaned:
			byStatus[objectOrphaned]++
		default:
			byStatus[objectValid]++
		}
	}
	g.Reset()
	for kind, byStatus := range counts {
		for _, st := range objectStatuses {
			g.WithLabelValues(kind, st).Set(float64(byStatus[st]))
		}
	}
}

// registerHealth registers portcullis_objects, portcullis_build_failing
// and the xDS clients' collector.
func (s *Server) registerHealth() {
	s.metrics.registry.MustRegister(s.metrics.objects, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "portcullis_build_failing",
		Help: "1 while the last build could not be published (an extension failed under failurePolicy Closed, or the xDS server refused the update): Envoy keeps the last published configuration.",
	}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.buildErr != "" {
			return 1
		}
		return 0
	}), &xdsCollector{xds: s.xds})
}

// xdsCollector reports the xDS clients connected and how far behind they
// are, read from the xDS server at each scrape.
type xdsCollector struct{ xds *xdsserver.Server }

var (
	xdsClientsDesc = prometheus.NewDesc("portcullis_xds_clients",
		"ADS streams open (each Envoy holds one).", nil, nil)
	xdsBehindDesc = prometheus.NewDesc("portcullis_xds_clients_behind",
		"ADS streams that have not ACKed the latest response of the type sent to them (they NACKed it, or have not answered yet).", []string{"type"}, nil)
	xdsLagDesc = prometheus.NewDesc("portcullis_xds_ack_lag_seconds",
		"How long the stream furthest behind has had a response of the type it has not ACKed (0 when every stream ACKed the latest).", []string{"type"}, nil)
)

func (c *xdsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- xdsClientsDesc
	ch <- xdsBehindDesc
	ch <- xdsLagDesc
}

func (c *xdsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(xdsClientsDesc, prometheus.GaugeValue, float64(c.xds.Connected()))
	lags := map[string]xdsserver.Lag{}
	for typeURL, l := range c.xds.Lags(time.Now()) {
		lags[typeLabel(typeURL)] = l
	}
	for _, t := range rejectionTypes {
		l := lags[t]
		ch <- prometheus.MustNewConstMetric(xdsBehindDesc, prometheus.GaugeValue, float64(l.Behind), t)
		ch <- prometheus.MustNewConstMetric(xdsLagDesc, prometheus.GaugeValue, l.Oldest.Seconds(), t)
	}
}
