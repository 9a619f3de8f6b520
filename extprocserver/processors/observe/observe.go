// Package observe is the built-in processor that records each exchange's
// timing and sizes: as response headers for the client and as Prometheus
// metrics.
//
// Sizes come from Content-Length, or from counting body bytes when Envoy
// sends bodies (any body mode other than NONE); a size that is unknown when
// the response headers leave is not sent as a header.
package observe

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Config is the YAML of the observe processor.
type Config struct {
	// HeaderPrefix names the response headers: <prefix>upstream-ms,
	// <prefix>request-bytes, <prefix>response-bytes. Default
	// "x-portcullis-"; "-" disables the headers (metrics only).
	HeaderPrefix string `json:"headerPrefix,omitempty"`
}

// Metrics are the observe processor's collectors.
type Metrics struct {
	upstream *prometheus.HistogramVec
	sizes    *prometheus.HistogramVec
}

// NewMetrics registers the collectors on reg (once per registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "portcullis_extprocserver_upstream_seconds",
			Help:    "Time from the request headers to the response headers, by response status class.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"code_class"}),
		sizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "portcullis_extprocserver_body_bytes",
			Help:    "Request and response body sizes, where known.",
			Buckets: prometheus.ExponentialBuckets(64, 4, 10),
		}, []string{"direction"}),
	}
	for _, c := range []prometheus.Collector{m.upstream, m.sizes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series from the start, at zero, so that rates and alerts work
	// before the first request.
	for _, c := range codeClasses {
		m.upstream.WithLabelValues(c)
	}
	for _, d := range []string{"request", "response"} {
		m.sizes.WithLabelValues(d)
	}
	return m, nil
}

// codeClasses are the values of the code_class label (see codeClass).
var codeClasses = []string{"1xx", "2xx", "3xx", "4xx", "5xx", "unknown"}

// Processor is the observe processor.
type Processor struct {
	sdk.Continue
	prefix  string
	metrics *Metrics
}

type state struct {
	reqBytes, respBytes int64 // counted body bytes
	reqKnown, respKnown bool
	recorded            bool
}

type stateKey struct{}

// New builds the processor; metrics may be nil (headers only).
func New(cfg Config, metrics *Metrics) (*Processor, error) {
	p := &Processor{prefix: cfg.HeaderPrefix, metrics: metrics}
	if p.prefix == "" {
		p.prefix = "x-portcullis-"
	}
	if p.prefix == "-" {
		p.prefix = ""
	}
	return p, nil
}

func st(x *sdk.Exchange) *state {
	s, _ := x.Value(stateKey{}).(*state)
	if s == nil {
		s = &state{}
		x.SetValue(stateKey{}, s)
	}
	return s
}

func declared(h *sdk.Headers) (int64, bool) {
	if h.EndOfStream {
		return 0, true
	}
	n, err := strconv.ParseInt(h.Get("content-length"), 10, 64)
	return n, err == nil
}

// RequestHeaders notes the request size the headers declare.
func (p *Processor) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	s := st(x)
	s.reqBytes, s.reqKnown = declared(h)
	return nil
}

// RequestBody counts the request body's bytes.
func (p *Processor) RequestBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	s := st(x)
	if b.Chunk == 1 {
		s.reqBytes = 0
	}
	s.reqBytes += int64(len(b.Bytes()))
	s.reqKnown = s.reqKnown || b.EndOfStream
	return nil
}

// ResponseHeaders adds the timing and size headers and observes the
// upstream's latency.
func (p *Processor) ResponseHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	s := st(x)
	took := x.Elapsed()
	s.respBytes, s.respKnown = declared(h)
	if p.prefix != "" {
		h.Set(p.prefix+"upstream-ms", strconv.FormatFloat(float64(took)/float64(time.Millisecond), 'f', 3, 64))
		if s.reqKnown {
			h.Set(p.prefix+"request-bytes", strconv.FormatInt(s.reqBytes, 10))
		}
		if s.respKnown {
			h.Set(p.prefix+"response-bytes", strconv.FormatInt(s.respBytes, 10))
		}
	}
	if p.metrics != nil {
		p.metrics.upstream.WithLabelValues(codeClass(h.Get(":status"))).Observe(took.Seconds())
		if s.reqKnown {
			p.metrics.sizes.WithLabelValues("request").Observe(float64(s.reqBytes))
		}
		if h.EndOfStream || s.respKnown {
			p.record(s)
		}
	}
	return nil
}

// ResponseBody counts the response body's bytes, recording the sizes at
// its end.
func (p *Processor) ResponseBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	s := st(x)
	if b.Chunk == 1 && !s.recorded {
		s.respBytes = 0
	}
	if !s.recorded {
		s.respBytes += int64(len(b.Bytes()))
	}
	if b.EndOfStream && p.metrics != nil {
		p.record(s)
	}
	return nil
}

// ResponseTrailers records the sizes of a response that ends with
// trailers.
func (p *Processor) ResponseTrailers(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
	if p.metrics != nil {
		p.record(st(x))
	}
	return nil
}

func (p *Processor) record(s *state) {
	if !s.recorded {
		s.recorded = true
		p.metrics.sizes.WithLabelValues("response").Observe(float64(s.respBytes))
	}
}

func codeClass(status string) string {
	if len(status) == 3 && status[0] >= '1' && status[0] <= '5' {
		return status[:1] + "xx"
	}
	return "unknown"
}
