package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// maxEnvoyMessage bounds Envoy's error_detail in a status message (an
// EnvoyRejected error: the object's configuration is not in force, Envoy
// keeps serving the previous one).
const maxEnvoyMessage = 2000

// withEnvoyRejections returns the findings objs (a build's) with an
// EnvoyRejected error on every object a current rejection is attributed
// to (by idx, the index of the build's resources), and the rejections that
// no object can be blamed for. objs itself is not modified.
//
// touched, when not nil, names the extensions that changed a resource
// (extension.Chain.Touched): a rejection of one says so.
func withEnvoyRejections(objs []*status.Object, idx *pipeline.Index, rejections []xdsserver.Rejection, touched func(typeURL, name string) []string) ([]*status.Object, []xdsserver.Rejection) {
	if len(rejections) == 0 || idx == nil {
		return objs, rejections
	}
	problems := map[objects.Ref][]status.Problem{}
	var unattributed []xdsserver.Rejection
	for _, r := range rejections {
		refs := idx.Objects(r.TypeURL, r.Resources, r.Message)
		if len(refs) == 0 {
			unattributed = append(unattributed, r)
			continue
		}
		msg := rejectionMessage(r)
		if touched != nil {
			var by []string
			for _, n := range r.Resources {
				for _, t := range touched(r.TypeURL, n) {
					if !slices.Contains(by, t) {
						by = append(by, t)
					}
				}
			}
			if len(by) > 0 {
				msg += "; changed by " + strings.Join(by, ", ")
			}
		}
		p := status.Problem{Type: status.TypeEnvoyRejected, Reason: status.ReasonRejectedByEnvoy, Message: msg}
		for _, ref := range refs {
			problems[ref] = append(problems[ref], p)
		}
	}
	if len(problems) == 0 {
		return objs, unattributed
	}
	out := make([]*status.Object, len(objs))
	for i, o := range objs {
		out[i] = o
		if ps := problems[o.Ref]; len(ps) > 0 {
			out[i] = o.WithErrors(ps...)
		}
	}
	return out, unattributed
}

func rejectionMessage(r xdsserver.Rejection) string {
	msg := r.Message
	if len(msg) > maxEnvoyMessage {
		msg = msg[:maxEnvoyMessage] + "..."
	}
	return fmt.Sprintf("Envoy rejected %s %s (version %s; it keeps the last accepted one): %s",
		typeLabel(r.TypeURL), strings.Join(r.Resources, ", "), r.Version, msg)
}

// countRejection counts a NACK by type: one of rejectionTypes, else
// "other" (a label is never what a client wrote).
func (s *Server) countRejection(r xdsserver.Rejection) {
	l := typeLabel(r.TypeURL)
	if !slices.Contains(rejectionTypes, l) {
		l = "other"
	}
	s.metrics.rejections.WithLabelValues(l).Inc()
}

// rejectionStatusInterval is the least time between two publications of
// the statuses that a change in what Envoy rejects causes (each writes
// only the statuses that changed): a storm of NACKs writes each object's
// status at most once a second.
const rejectionStatusInterval = time.Second

// pace passes the signals of in on to out (both holding one), at most
// once per every: one that comes sooner is passed on when every has
// passed since the last, with any others that came meanwhile.
func pace(ctx context.Context, in <-chan struct{}, out chan<- struct{}, every time.Duration) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
		}
		if wait := every - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		select {
		case out <- struct{}{}:
		default: // one is pending already
		}
	}
}

// typeLabel is the short name of an xDS type URL ("Cluster").
func typeLabel(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// metrics of the control plane, served on the admin port at /metrics.
type metrics struct {
	registry   *prometheus.Registry
	rejections *prometheus.CounterVec
	translate  prometheus.Histogram
	// rootsReused and rootsBuilt count the root HTTPProxies of each build
	// taken from the previous build (unchanged) and built again.
	rootsReused, rootsBuilt prometheus.Counter
	// extIdle is 1 for an extension the last rebuild did not call.
	extIdle *prometheus.GaugeVec
	// configFile is 1, by reason, while the configuration file on disk
	// is not in force (configfile.go).
	configFile *prometheus.GaugeVec
	// objects counts the last build's objects by kind and status (health.go).
	objects *prometheus.GaugeVec
}

// rejectionTypes are the resource types Envoy can reject, as typeLabel
// names them.
var rejectionTypes = []string{"Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment", "Secret"}

// statusCounter is a status writer that counts its API writes.
type statusCounter interface{ StatusWrites() int64 }

func newMetrics(w statuswriter.Writer, l Leadership) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_xds_rejections_total",
			Help: "ADS NACKs received from Envoy, by resource type (Listener, RouteConfiguration, Cluster, ClusterLoadAssignment, Secret).",
		}, []string{"type"}),
		translate: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "portcullis_translate_seconds",
			Help:    "Time to build and translate one full snapshot.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		rootsReused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_roots_reused_total",
			Help: "Root HTTPProxies a build took from the previous build because nothing they read changed.",
		}),
		rootsBuilt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_roots_built_total",
			Help: "Root HTTPProxies a build built (new, changed, or something they read changed).",
		}),
		extIdle: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "portcullis_extension_idle",
			Help: "1 when the last rebuild called none of the extension's hooks (registered but unused: e.g. no route references its kinds), else 0.",
		}, []string{"extension"}),
		configFile: newConfigFileGauge(),
		objects:    newObjectsGauge(),
	}
	// Every series the docs name exists from the start, at zero, so that
	// dashboards and alerts (rate, absent) work before the first NACK.
	for _, t := range rejectionTypes {
		m.rejections.WithLabelValues(t)
	}
	m.registry.MustRegister(m.rejections, m.translate, m.rootsReused, m.rootsBuilt, m.extIdle, m.configFile,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "portcullis_leader",
		Help: "1 while this replica is the one that writes status (it holds the leader election's Lease, or runs without leader election), else 0.",
	}, func() float64 {
		if l == nil || l.Leading() {
			return 1
		}
		return 0
	}))
	if c, ok := w.(statusCounter); ok {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "portcullis_status_writes_total",
			Help: "Status updates sent to the API server (only changed statuses are written).",
		}, func() float64 { return float64(c.StatusWrites()) }))
	}
	return m
}
