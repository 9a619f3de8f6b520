// Package serve runs the control plane: it takes snapshots of input objects
// from a provider, debounces bursts, runs the pipeline on the full snapshot,
// publishes the result to Envoy over xDS and writes the status back.
package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
	"github.com/portcullis/portcullis/controlplane/internal/xdstls"
)

// Provider delivers snapshots of the input objects: a new full Set on every
// change, until ctx ends.
type Provider interface {
	Run(ctx context.Context, update func(*objects.Set)) error
}

// Config of a running control plane.
type Config struct {
	Pipeline     pipeline.Options
	XDSAddress   string
	AdminAddress string
	// MetricsAddress, when set, serves GET /metrics alone, for Prometheus
	// to scrape from outside the Pod while the admin endpoint (its /config
	// and /status) stays on loopback.
	MetricsAddress string
	// Debounce is the minimum time between two builds: a change after a
	// quiet period is built at once, one sooner waits for the rest of it
	// and joins the changes that arrive meanwhile.
	Debounce time.Duration
	Provider Provider
	Status   statuswriter.Writer
	// GatewayServices, when set, keeps the Gateways' Services as each
	// build wants them (gateway.servicePerGateway; statuswriter.Services).
	GatewayServices interface {
		Apply(ctx context.Context, want []*corev1.Service) error
	}
	Log *slog.Logger
	// Options, when set, delivers new pipeline options (the configuration
	// file changed); each one triggers a rebuild of the last snapshot.
	Options OptionsSource
	// Extensions are the extension servers whose hooks every rebuild
	// calls on the pipeline's output before publishing it, in order
	// (docs/extensions.md).
	Extensions []extension.Registration
	// XDSClientTimeout is how long an xDS client may take to read a
	// response and to answer it before its stream is dropped
	// (xdsserver.Server.ClientTimeout); 0: xdsserver.DefaultClientTimeout.
	XDSClientTimeout time.Duration
	// XDSTLS, when set, serves xDS over mutual TLS with its certificates
	// (read again when their files change).
	XDSTLS *xdstls.Reloader
	// Leader, when set, decides when this replica writes status (leader
	// election, internal/leader); nil: it always does.
	Leader Leadership
}

// Leadership runs lead while this replica is the one that writes status.
type Leadership interface {
	// Run campaigns until ctx ends; lead runs, with a context that ends
	// when leadership is lost, each time it is won. Run returns once the
	// last lead has.
	Run(ctx context.Context, lead func(ctx context.Context))
	// Leading reports whether lead is running.
	Leading() bool
}

// OptionsSource delivers new pipeline options until ctx ends, and calls
// problem with why the newest configuration file is not applied (nil once
// the file in force is the one on disk again): /status's configFile and
// portcullis_config_file_not_applied.
type OptionsSource interface {
	Run(ctx context.Context, update func(pipeline.Options), problem func(error))
}

// Server is a running control plane.
type Server struct {
	cfg Config
	xds *xdsserver.Server
	// ext are the registered extension servers; nil without any.
	ext *extensions
	// envoyChanged signals that what Envoy rejects changed: statuses must
	// be published again (without a rebuild).
	envoyChanged chan struct{}
	// rejected signals each change in what Envoy rejects; pace passes
	// them on to envoyChanged, at most once per rejectionStatusInterval.
	rejected chan struct{}
	metrics  *metrics
	// toWrite hands the newest statuses to the status writer's goroutine:
	// writing thousands of statuses must not hold back the next build.
	toWrite chan []statuswriter.Update
	// servicesChanged tells the Gateways' Services writer that a build
	// changed services.
	servicesChanged chan struct{}

	mu      sync.Mutex
	version string
	ready   bool
	// servable: the last publication has a listener, or the translation
	// made none (readyz).
	servable bool
	buildErr string
	// configErr is why the configuration file on disk is not in force
	// ("" when it is).
	configErr string
	// The last build and the statuses written. lastRes's Resources are
	// those published (their Index attributes Envoy's rejections): the
	// build's own, as the extension changed them, or, when the extension
	// failed under failurePolicy Closed, the last ones published before
	// (nil when none was).
	lastSet *objects.Set
	lastRes *pipeline.Result
	// invalid are the objects the last published build found invalid
	// (invalidlog.go), for the rebuild loop only.
	invalid  map[objects.Ref]bool
	statuses []statuswriter.Update
	// services is the Gateways' Services of the last build
	// (gateway.servicePerGateway), servicesBuilt whether there was one.
	services      []*corev1.Service
	servicesBuilt bool
	// extProblems are the ExtensionError problems of the last build, by
	// object: errors under failurePolicy Closed, warnings under Open.
	extProblems map[objects.Ref][]extProblem
	// published holds the findings of the last statuses handed to the
	// writer (loop goroutine only).
	published    map[objects.Ref]publishedStatus
	lastFullPass time.Time
	// cache holds what the last build can lend the next (loop goroutine
	// only): a change builds and translates only what changed.
	cache *pipeline.Cache
	// retryMin and retryMax are the first and the longest wait before a
	// build whose extension hooks failed is made again
	// (extensionRetryMin, extensionRetryMax; tests set others).
	retryMin, retryMax time.Duration
}

// newServer returns a server of cfg, connected (lazily) to its extension.
// It serves nothing yet; close stops what it started.
func newServer(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, xds: xdsserver.New(cfg.Log), envoyChanged: make(chan struct{}, 1), metrics: newMetrics(cfg.Status, cfg.Leader),
		toWrite: make(chan []statuswriter.Update, 1), servicesChanged: make(chan struct{}, 1), cache: pipeline.NewCache(),
		retryMin: extensionRetryMin, retryMax: extensionRetryMax}
	if cfg.XDSClientTimeout > 0 {
		s.xds.ClientTimeout = cfg.XDSClientTimeout
	}
	s.registerDropped()
	s.registerHealth()
	if cfg.XDSTLS != nil {
		s.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "portcullis_xds_certificate_expiry_timestamp_seconds",
			Help: "When the xDS server's certificate in use expires (Unix time): alert well before it, a rotation that did not happen shows here.",
		}, func() float64 { return float64(cfg.XDSTLS.NotAfter().Unix()) }))
	}
	s.xds.OnRejection = s.countRejection
	for _, reason := range xdsserver.RefusedReasons {
		s.metrics.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "portcullis_xds_refused_total",
			Help:        "xDS streams and requests refused, and NACKs not kept, by reason (the limits on xDS clients).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(s.xds.Refused()[reason]) }))
	}
	ext, err := newExtensions(cfg.Extensions, cfg.Log, s.metrics)
	if err != nil {
		return nil, err
	}
	s.ext = ext
	return s, nil
}

// registerDropped registers portcullis_xds_streams_dropped_total, by
// reason: the xDS streams dropped because their client did not answer
// (unanswered) or did not read (unread) a response within the client
// timeout.
func (s *Server) registerDropped() {
	for reason, count := range map[string]func() uint64{
		"unanswered": func() uint64 { n, _ := s.xds.Dropped(); return n },
		"unread":     func() uint64 { _, n := s.xds.Dropped(); return n },
	} {
		s.metrics.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "portcullis_xds_streams_dropped_total",
			Help:        "xDS streams dropped because their client did not answer (ACK or NACK) a response, or did not read one, within --xds-client-timeout.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(count()) }))
	}
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	s, err := newServer(cfg)
	if err != nil {
		return err
	}
	defer s.ext.close()
	s.rejected = make(chan struct{}, 1)
	s.xds.OnChange = func() {
		select {
		case s.rejected <- struct{}{}:
		default:
		}
	}
	xdsLis, err := net.Listen("tcp", cfg.XDSAddress)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	errc := make(chan error, 3)
	var xdsTLS *tls.Config
	if cfg.XDSTLS != nil {
		xdsTLS = cfg.XDSTLS.ServerConfig()
	}
	go func() { errc <- s.xds.Serve(ctx, xdsLis, xdsTLS) }()
	if cfg.AdminAddress != "" {
		if err := serveHTTP(ctx, cfg.AdminAddress, s.adminHandler(), errc); err != nil {
			return err
		}
	}
	if cfg.MetricsAddress != "" {
		if err := serveHTTP(ctx, cfg.MetricsAddress, s.metricsHandler(), errc); err != nil {
			return err
		}
	}
	cfg.Log.Info("control plane serving", "xds", xdsLis.Addr().String(), "mTLS", cfg.XDSTLS != nil, "admin", cfg.AdminAddress, "metrics", cfg.MetricsAddress)

	updates, options := watchInputs(ctx, cfg, errc, s.configFileProblem)
	go pace(ctx, s.rejected, s.envoyChanged, rejectionStatusInterval)
	go s.loop(ctx, updates, options)
	if cfg.Leader == nil {
		go s.write(ctx)
	} else {
		release := campaign(ctx, cancel, cfg.Leader, s.lead, cfg.Log)
		defer release()
	}

	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

// serveHTTP serves h on addr until ctx ends; an error of the server goes
// to errc.
func serveHTTP(ctx context.Context, addr string, h http.Handler, errc chan<- error) error {
	adminLis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		// Serve returns ErrServerClosed whatever closing the listener
		// says: on the way out there is nothing else to do.
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(adminLis); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return nil
}

// metricsHandler serves the metrics at GET /metrics, and nothing else.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

// watchInputs runs the provider, and the options' source when there is
// one, until ctx ends. Each channel holds only the newest value: every
// snapshot and every options value is complete, so an older one that
// was not read yet is dropped.
func watchInputs(ctx context.Context, cfg Config, errc chan<- error, problem func(error)) (<-chan *objects.Set, <-chan pipeline.Options) {
	updates := make(chan *objects.Set, 1)
	go func() {
		errc <- cfg.Provider.Run(ctx, func(set *objects.Set) {
			select {
			case <-updates:
			default:
			}
			updates <- set
		})
	}()
	options := make(chan pipeline.Options, 1)
	if cfg.Options != nil {
		go cfg.Options.Run(ctx, func(o pipeline.Options) {
			select {
			case <-options:
			default:
			}
			options <- o
		}, problem)
	}
	return updates, options
}

// campaign runs the leader election: every replica watches, builds and
// serves xDS; only the leader writes to the API server (status, the
// Gateways' Services), in lead. release ends it on the way out, waiting
// (5 s at most) for the leader to release the Lease, so that another
// replica takes over at once rather than after its duration.
func campaign(ctx context.Context, cancel context.CancelFunc, l Leadership, lead func(context.Context), log *slog.Logger) (release func()) {
	led := make(chan struct{})
	go func() {
		defer close(led)
		l.Run(ctx, lead)
	}()
	return func() {
		cancel()
		select {
		case <-led:
		case <-time.After(5 * time.Second):
			log.Warn("leader election: the lease was not released in time")
		}
	}
}

// lead writes status while this replica leads (ctx ends when it no longer
// does). It starts with every status of the last build, not only those
// that changed: while following, this replica computed statuses it never
// wrote, and the previous leader may have died before writing its last
// ones. The writer compares each with the API server's copy and writes
// only those that differ, so a new leader rewrites nothing unchanged.
func (s *Server) lead(ctx context.Context) {
	// Drain first, then read: a batch sent after the read is newer and is
	// written by writeStatuses below.
	select {
	case <-s.toWrite:
	default:
	}
	s.mu.Lock()
	all := s.statuses
	s.mu.Unlock()
	if len(all) > 0 && s.cfg.Status != nil {
		s.cfg.Status.Write(ctx, all)
	}
	s.write(ctx)
}

// write runs what writes to the API server, the statuses and the Gateways'
// Services, until ctx ends.
func (s *Server) write(ctx context.Context) {
	if s.cfg.GatewayServices != nil {
		go s.applyServices(ctx)
	}
	s.writeStatuses(ctx)
}

func (s *Server) loop(ctx context.Context, updates <-chan *objects.Set, options <-chan pipeline.Options) {
	var set *objects.Set
	// lastBuild is when the last build ended: a change that comes after a
	// quiet period is built at once (a single edit should not wait for the
	// debounce); one that comes right after a build may be part of a burst
	// and waits until a debounce has passed since that build, taking in
	// what else arrives meanwhile. Builds are never closer than a debounce.
	var lastBuild time.Time
	// retry fires when a build whose extension hooks failed is to be made
	// again (nil when none is due): nothing else would call the hooks
	// again until the objects change, so a recovered extension would not
	// be used (Closed: a stale configuration; Open: one without the
	// extension's changes). The wait doubles, up to retryMax,
	// while the hooks keep failing. It is the fallback: an extension whose
	// connection becomes ready again (reconnected) brings the retry at
	// once, instead of when the timer next fires, which could be a whole
	// wait after the extension came back (its connection was still
	// waiting to reconnect when the last retry called it).
	var retry <-chan time.Time
	var retryWait time.Duration
	reconnected, watching := s.ext.watchReady(ctx)
	defer watching()
	for {
		select {
		case <-ctx.Done():
			return
		case set = <-updates:
		case s.cfg.Pipeline = <-options:
		case <-retry:
		case <-reconnected:
			if retry == nil {
				// No build waits for an extension.
				continue
			}
		case <-s.envoyChanged:
			s.publishStatus(ctx)
			continue
		}
		if wait := debounceWait(time.Since(lastBuild), s.cfg.Debounce); wait > 0 {
			// Debounce: a burst of changes (a kubectl apply of many
			// objects) becomes one build.
			var ok bool
			if set, ok = s.drain(ctx, wait, set, updates, options); !ok {
				return
			}
		}
		if set != nil {
			if s.rebuild(ctx, set) {
				retryWait = min(max(2*retryWait, s.retryMin), s.retryMax)
				retry = time.After(retryWait)
			} else {
				retry, retryWait = nil, 0
			}
		}
		lastBuild = time.Now()
	}
}

// drain waits wait, taking in the updates and options that arrive
// meanwhile: it returns the newest set (set when none came), and false
// when ctx ended first.
func (s *Server) drain(ctx context.Context, wait time.Duration, set *objects.Set, updates <-chan *objects.Set,
	options <-chan pipeline.Options) (*objects.Set, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return set, false
		case set = <-updates:
		case s.cfg.Pipeline = <-options:
		case <-timer.C:
			return set, true
		}
	}
}

// The first and the longest wait before a build whose extension hooks
// failed is made again.
const (
	extensionRetryMin = time.Second
	extensionRetryMax = 15 * time.Second
)

// debounceWait is how long a change that comes sinceBuild after the last
// build waits before the next build.
func debounceWait(sinceBuild, debounce time.Duration) time.Duration {
	return max(debounce-sinceBuild, 0)
}

// rebuild builds set, runs the extensions' hooks and publishes the
// result. It reports whether a hook call failed (the build is to be made
// again).
func (s *Server) rebuild(ctx context.Context, set *objects.Set) (extFailed bool) {
	start := time.Now()
	res := pipeline.RunCached(set, s.cfg.Pipeline, s.cache)
	built := time.Since(start)
	s.metrics.translate.Observe(built.Seconds())
	s.metrics.rootsReused.Add(float64(s.cache.Build.Hits))
	s.metrics.rootsBuilt.Add(float64(s.cache.Build.Misses))
	countObjects(s.metrics.objects, res.Build.Status)
	out, extProblems, extFailed := s.ext.apply(ctx, set, res)
	if out == nil {
		// The extension failed under failurePolicy Closed: Envoy keeps
		// the last published configuration, the objects get their
		// statuses (with the failures).
		s.mu.Lock()
		kept := &pipeline.Result{Build: res.Build}
		if s.lastRes != nil {
			kept.Resources = s.lastRes.Resources
		}
		s.lastSet, s.lastRes, s.extProblems = set, kept, extProblems
		s.buildErr = "extension hooks failed (failurePolicy Closed): the last published configuration stays in force"
		version := s.version
		s.mu.Unlock()
		s.cfg.Log.Error("extension hooks failed (failurePolicy Closed): keeping the last published configuration", "version", version,
			"objects", len(res.Build.Status), "took", time.Since(start).Round(time.Microsecond))
		s.reportGlobal(res.Build.Unavailable)
		s.publishStatus(ctx)
		return
	}
	// Servable: an extension (with mayRemoveAll) may leave Envoy no
	// listener of those the translation had; then the control plane is
	// not ready.
	servable := len(out.Resources.Listeners) > 0 || len(res.Resources.Listeners) == 0
	res = out
	version, err := s.xds.Update(ctx, res.Resources)
	s.mu.Lock()
	if err != nil {
		s.buildErr = err.Error()
		s.mu.Unlock()
		s.cfg.Log.Error("publishing configuration failed: keeping the last good one", "err", err)
		return
	}
	s.version, s.ready, s.servable, s.buildErr = version, true, servable, ""
	s.lastSet, s.lastRes, s.extProblems = set, res, extProblems
	s.mu.Unlock()
	invalid, newly := newlyInvalid(s.invalid, res.Build.Status)
	s.invalid = invalid
	warnInvalid(s.cfg.Log, newly)
	s.cfg.Log.Info("configuration published", "version", s.version, "objects", len(res.Build.Status), "invalid", len(invalid),
		"listeners", len(res.Resources.Listeners), "clusters", len(res.Resources.Clusters), "took", time.Since(start).Round(time.Microsecond),
		"pipeline", built.Round(time.Microsecond), "rootsReused", s.cache.Build.Hits, "rootsBuilt", s.cache.Build.Misses,
		"hostsReused", s.cache.Translate.Hits, "hostsTranslated", s.cache.Translate.Misses)
	s.reportGlobal(res.Build.Unavailable)
	s.publishStatus(ctx)
	return extFailed
}

// publishStatus computes the statuses of the last build, with what Envoy
// currently rejects, and hands them to the status writer.
func (s *Server) publishStatus(ctx context.Context) {
	s.mu.Lock()
	set, res, extProblems := s.lastSet, s.lastRes, s.extProblems
	s.mu.Unlock()
	if res == nil {
		return
	}
	var idx *pipeline.Index
	if res.Resources != nil {
		idx = res.Resources.Index
	}
	objs, unattributed := withEnvoyRejections(res.Build.Status, idx, s.xds.Rejections(), s.ext.touched())
	objs = withExtensionProblems(objs, extProblems)
	for _, r := range unattributed {
		if !idx.Served(r.TypeURL, r.Resources) {
			// Rejected before its objects were deleted: Envoy's answer to
			// the removal settles it.
			s.cfg.Log.Debug("Envoy's rejection names resources no longer served", "type", r.TypeURL, "resources", r.Resources)
			continue
		}
		s.cfg.Log.Warn("Envoy rejected configuration that no HTTPProxy or ExtensionService can be blamed for", "type", r.TypeURL, "resources", r.Resources, "error", r.Message)
	}
	statuses := pipeline.Statuses(set, objs, metav1.Now())
	s.mu.Lock()
	s.statuses = statuses
	s.mu.Unlock()
	batch := s.changedStatuses(objs, statuses, pipeline.UIDs(set))
	// A batch the writer has not taken yet is merged in, newer first.
	select {
	case pending := <-s.toWrite:
		batch = mergeBatches(batch, pending)
	default:
	}
	s.toWrite <- batch
	// A build that cannot say what the Gateways' Services should be (the
	// Envoy Service is gone a moment) keeps the last known set: deleting
	// them would release their load balancers' addresses.
	if s.cfg.GatewayServices != nil && res.Build.GatewayServices != nil {
		s.mu.Lock()
		s.services, s.servicesBuilt = res.Build.GatewayServices, true
		s.mu.Unlock()
		select {
		case s.servicesChanged <- struct{}{}:
		default:
		}
	}
}

// applyServices keeps the Gateways' Services as the newest build wants
// them, retrying a failed write every few seconds, until ctx ends. It
// starts with the last build's (a new leader's, built while following).
func (s *Server) applyServices(ctx context.Context) {
	for {
		s.mu.Lock()
		want, built := s.services, s.servicesBuilt
		s.mu.Unlock()
		var retry <-chan time.Time
		if built {
			if err := s.cfg.GatewayServices.Apply(ctx, want); err != nil && ctx.Err() == nil {
				s.cfg.Log.Warn("writing the Gateways' Services", "error", err)
				retry = time.After(5 * time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.servicesChanged:
		case <-retry:
		}
	}
}

// fullStatusPass is how often every status is checked against the API
// server, not only those whose findings changed (to repair writes that
// failed, or statuses someone else changed).
const fullStatusPass = time.Minute

// changedStatuses returns the statuses of the objects whose findings
// changed since the last publish (all of them on a full pass): with tens of
// thousands of objects, comparing each one with the API server's copy on
// every rebuild costs more than the rebuild. statuses[i] is objs[i]'s.
//
// uids are the objects' UIDs (pipeline.UIDs): an object deleted and
// created again under its name within one build's debounce is another
// object, which needs its status even with the same findings.
func (s *Server) changedStatuses(objs []*status.Object, statuses []statuswriter.Update, uids map[objects.Ref]types.UID) []statuswriter.Update {
	full := time.Since(s.lastFullPass) > fullStatusPass
	if full {
		s.lastFullPass = time.Now()
	}
	published := make(map[objects.Ref]publishedStatus, len(objs))
	var out []statuswriter.Update
	for i, o := range objs {
		p := publishedStatus{o, uids[o.Ref]}
		published[o.Ref] = p
		if prev, ok := s.published[o.Ref]; full || !ok || prev.uid != p.uid || !prev.findings.Same(o) {
			out = append(out, statuses[i])
		}
	}
	s.published = published
	return out
}

// publishedStatus is what was last handed to the status writer for an
// object: its findings, and which object it was.
type publishedStatus struct {
	findings *status.Object
	uid      types.UID
}

// mergeBatches adds to batch the statuses of older that it does not have.
func mergeBatches(batch, older []statuswriter.Update) []statuswriter.Update {
	have := make(map[objects.Ref]bool, len(batch))
	for _, st := range batch {
		have[st.Ref] = true
	}
	for _, st := range older {
		if !have[st.Ref] {
			batch = append(batch, st)
		}
	}
	return batch
}

// writeStatuses runs the status writer on the newest statuses, one batch
// at a time, until ctx ends.
func (s *Server) writeStatuses(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-s.toWrite:
			if s.cfg.Status != nil && len(st) > 0 {
				s.cfg.Status.Write(ctx, st)
			}
		}
	}
}

// adminHandler serves health, readiness, the statuses and the current
// configuration (private keys redacted). It has no authentication: bind it
// to loopback or a private interface.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeOK(w) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		ready, servable := s.ready, s.servable
		s.mu.Unlock()
		switch {
		case !ready:
			http.Error(w, "no configuration built yet", http.StatusServiceUnavailable)
		case !servable:
			http.Error(w, "the published configuration has no listener: the extensions' answers removed every one the translation made", http.StatusServiceUnavailable)
		default:
			writeOK(w)
		}
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		st := s.statuses
		body := map[string]any{
			"leader":     s.cfg.Leader == nil || s.cfg.Leader.Leading(),
			"version":    s.version,
			"buildError": s.buildErr,
			"configFile": map[string]any{"error": s.configErr},
			"objects":    st,
			"envoy": map[string]any{
				"connected": s.xds.Connected(),
				// Over mTLS: the certificate each stream's Envoy presented.
				"clientCertificates": s.xds.ClientCertificates(),
				"acked":              s.xds.Acked(),
				"rejections":         s.xds.Rejections(),
			},
		}
		s.mu.Unlock()
		writeJSON(w, body)
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		set, res, st := s.lastSet, s.lastRes, s.statuses
		s.mu.Unlock()
		if res == nil || res.Resources == nil {
			writeJSON(w, nil)
			return
		}
		// Rendered on demand: protojson of a large configuration is too
		// costly to do on every rebuild.
		doc, err := pipeline.NewDocument(set, res, metav1.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		doc.Status = st
		writeJSON(w, doc)
	})
	mux.HandleFunc("GET /extensions", s.ext.serveHTTP)
	mux.Handle("GET /metrics", s.metricsHandler())
	// Profiles, for performance work at scale.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	return mux
}

// writeOK answers a probe. A failed write is the prober gone: there is
// no one left to tell.
func writeOK(w http.ResponseWriter) {
	_, _ = w.Write([]byte("ok\n"))
}

// writeJSON answers v as indented JSON. The values are the server's own
// (they encode); a failed write is the client gone, and with the status
// sent there is no one left to tell.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
