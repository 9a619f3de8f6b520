package htpasswd

import "github.com/prometheus/client_golang/prometheus"

// metrics of the htpasswd backend, beside the checks counter and latency
// histogram every backend has (package check).
type metrics struct {
	users        prometheus.Gauge
	sources      prometheus.Gauge
	skipped      prometheus.Gauge
	reloads      prometheus.Counter
	loadErrors   *prometheus.CounterVec
	cacheLookups *prometheus.CounterVec
	cacheHits    prometheus.Counter // resolved once: the hot path
	cacheMisses  prometheus.Counter
	comparisons  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, c *cache) (*metrics, error) {
	const ns = "portcullis_authserver_htpasswd_"
	m := &metrics{
		users: prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "users",
			Help: "Users loaded (a user defined for several realms counts once per realm scope)."}),
		sources: prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "sources",
			Help: "Secrets and files in use."}),
		skipped: prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "skipped_lines",
			Help: "Lines skipped in the data currently loaded (malformed, rejected hash, duplicate user)."}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "reloads_total",
			Help: "User table rebuilds (a Secret or file changed)."}),
		loadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "load_errors_total",
			Help: "Problems met while loading Secrets and files, by reason; each bad line counts every time its source is loaded."},
			[]string{"reason"}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "cache_lookups_total",
			Help: "Verification cache lookups, by result (hit, miss); unknown users and wrong passwords always miss."}, []string{"result"}),
		comparisons: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "hash_comparisons_total",
			Help: "Password hash comparisons run (cache misses after sharing concurrent identical checks), including the dummy comparison for unknown users."}),
	}
	entries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: ns + "cache_entries",
		Help: "Successful verifications held in the cache."}, func() float64 { return float64(c.len()) })
	for _, r := range loadErrorReasons {
		m.loadErrors.WithLabelValues(r)
	}
	m.cacheHits = m.cacheLookups.WithLabelValues("hit")
	m.cacheMisses = m.cacheLookups.WithLabelValues("miss")
	for _, col := range []prometheus.Collector{m.users, m.sources, m.skipped, m.reloads, m.loadErrors, m.cacheLookups, m.comparisons, entries} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	return m, nil
}
