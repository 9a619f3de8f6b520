package check

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
)

// Values of the result label of portcullis_authserver_checks_total.
const (
	ResultAllowed  = "allowed"  // OK: the request goes upstream
	ResultDenied   = "denied"   // a 4xx answer
	ResultRedirect = "redirect" // a 3xx answer (sign-in)
	ResultError    = "error"    // a 5xx answer: the backend failed or is misconfigured (fail closed)
)

var results = []string{ResultAllowed, ResultDenied, ResultRedirect, ResultError}

// Metrics counts Check decisions and measures their latency.
type Metrics struct {
	checks   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers portcullis_authserver_checks_total{backend,result}
// and portcullis_authserver_check_duration_seconds{backend,result} on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	checks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "portcullis_authserver_checks_total",
		Help: "Authorization checks answered, by backend and result (allowed, denied, redirect, error).",
	}, []string{"backend", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "portcullis_authserver_check_duration_seconds",
		Help: "Time the backend took to answer a check, by backend and result.",
		// From a cache hit (tens of microseconds) to slow password hashing
		// or identity-provider calls (seconds).
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"backend", "result"})
	for _, c := range []prometheus.Collector{checks, duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return &Metrics{checks: checks, duration: duration}, nil
}

// Wrap returns next with the duties every backend shares:
//
//   - fail closed: an error, a panic or a nil response from next becomes a
//     500 denial, never a gRPC error (which Envoy would turn into an allow
//     when the ExtensionService is configured to fail open);
//   - count every answer in m (all series start at zero, so a scrape can
//     prove a backend was never called);
//   - log one line per answer with method, host, path (no query string),
//     result and reason — never headers, so never credentials, tokens or
//     cookies;
//   - say the decision in every answer's dynamic metadata (decision.go);
//   - when the call is traced, set the decision and its reason on the
//     Check span (AttrDecision, AttrReason): the same reason.
func Wrap(backend string, next authv3.AuthorizationServer, m *Metrics, logger *slog.Logger) authv3.AuthorizationServer {
	w := &wrapped{backend: backend, next: next, duration: m.duration, logger: logger.With("backend", backend),
		checks: make(map[string]prometheus.Counter, len(results))}
	for _, r := range results {
		w.checks[r] = m.checks.WithLabelValues(backend, r)
		m.duration.WithLabelValues(backend, r) // every series from the start, at zero
	}
	return w
}

type wrapped struct {
	backend  string
	next     authv3.AuthorizationServer
	checks   map[string]prometheus.Counter // by result, looked up once in Wrap
	duration *prometheus.HistogramVec
	logger   *slog.Logger
}

func (w *wrapped) Check(ctx context.Context, req *authv3.CheckRequest) (resp *authv3.CheckResponse, _ error) {
	start := time.Now()
	span := trace.SpanFromContext(ctx)
	ctx, note := withNote(ctx)
	defer func() {
		if p := recover(); p != nil {
			w.logger.Error("panic in backend", "panic", p, "stack", string(debug.Stack()))
			resp = InternalError()
			note.Reason(ReasonPanic)
		}
		result := w.record(ctx, req, resp, note, time.Since(start))
		if span.IsRecording() {
			annotate(span, &note.reason, result)
		}
	}()
	resp, err := w.next.Check(ctx, req)
	if err != nil || resp == nil {
		w.logger.Error("backend failed; denying", "error", err)
		// A reason the backend noted says more (its route context is
		// invalid, say).
		note.ReasonIfNone(ReasonBackendError)
		return InternalError(), nil
	}
	return resp, nil
}

// The reasons every backend may give (SetReason, Note); each backend's
// own are beside it. ReasonBackendError and ReasonPanic: the backend
// returned an error or panicked (the answer is a 500); ReasonRouteContext:
// the route's context (or the backend's configuration) cannot be used;
// ReasonNoCredentials: the request carries no credentials of the
// backend's kind (an API client's 401).
const (
	ReasonBackendError  = "backend_error"
	ReasonPanic         = "panic"
	ReasonRouteContext  = "route_context"
	ReasonNoCredentials = "no_credentials"
)

// record counts, logs and answers with its decision (decide), and returns
// its result.
func (w *wrapped) record(ctx context.Context, req *authv3.CheckRequest, resp *authv3.CheckResponse, note *Note, took time.Duration) string {
	result, status := Classify(resp)
	decide(resp, w.backend, result, note)
	w.checks[result].Inc()
	w.duration.WithLabelValues(w.backend, result).Observe(took.Seconds())

	level := slog.LevelInfo
	switch result {
	case ResultAllowed:
		level = slog.LevelDebug // the hot path; enable with --log-level=debug
	case ResultError:
		level = slog.LevelWarn
	}
	if !w.logger.Enabled(ctx, level) {
		return result
	}
	h := req.GetAttributes().GetRequest().GetHttp()
	path, _, _ := strings.Cut(h.GetPath(), "?") // queries carry codes and tokens
	w.logger.LogAttrs(ctx, level, "check",
		slog.String("result", result),
		slog.Int("status", status),
		slog.String("method", h.GetMethod()),
		slog.String("host", h.GetHost()),
		slog.String("path", path),
		slog.String("reason", resp.GetDynamicMetadata().GetFields()[MetadataReason].GetStringValue()),
	)
	return result
}

// Classify returns the result label and HTTP status of a response as Envoy
// reads it: the gRPC status decides (OK, or absent, allows), then an
// error_response is an error and a denied_response carries the status
// (403 when unset).
func Classify(resp *authv3.CheckResponse) (result string, status int) {
	if resp.GetStatus().GetCode() == int32(codes.OK) {
		return ResultAllowed, http.StatusOK
	}
	if resp.GetErrorResponse() != nil {
		return ResultError, int(resp.GetErrorResponse().GetStatus().GetCode())
	}
	status = http.StatusForbidden
	if c := int(resp.GetDeniedResponse().GetStatus().GetCode()); c != 0 {
		status = c
	}
	switch {
	case status >= 300 && status < 400:
		return ResultRedirect, status
	case status >= 500:
		return ResultError, status
	default:
		return ResultDenied, status
	}
}
