package sdk

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of a processor's span.
const (
	AttrProcessor = "portcullis.extproc.processor" // the processor's name
	AttrPhase     = "portcullis.extproc.phase"     // request_headers, response_body...
	AttrImmediate = "portcullis.extproc.immediate" // true when it answered the client
)

// Traced runs p in a span "processor <name>" on every message it handles,
// child of the span in the context (the ext_proc stream's server span,
// in Envoy's trace), with the name and phase as attributes. A processor
// error sets the span's status to a fixed text (an error may quote the
// body). With tp nil, Traced returns p itself: no cost.
//
// In FULL_DUPLEX_STREAMED body mode each chunk is a message, so a span.
func Traced(name string, p Processor, tp trace.TracerProvider) Processor {
	if tp == nil {
		return p
	}
	return &traced{p: p, span: "processor " + name, name: attribute.String(AttrProcessor, name),
		tracer: tp.Tracer("github.com/portcullis/portcullis/extprocserver/sdk")}
}

type traced struct {
	p      Processor
	span   string
	name   attribute.KeyValue
	tracer trace.Tracer
}

// Each phase's attribute once, not per message.
var phaseAttrs = func() (a [ResponseTrailers + 1]attribute.KeyValue) {
	for p := RequestHeaders; p <= ResponseTrailers; p++ {
		a[p] = attribute.String(AttrPhase, p.String())
	}
	return a
}()

func (t *traced) run(ctx context.Context, x *Exchange, phase Phase, f func(context.Context) error) error {
	ctx, span := t.tracer.Start(ctx, t.span, trace.WithAttributes(t.name, phaseAttrs[phase]))
	defer span.End()
	err := f(ctx)
	if err != nil {
		span.SetStatus(codes.Error, "processor failed")
	}
	if x.immediate != nil { // a chain stops at the processor that responds
		span.SetAttributes(attribute.Bool(AttrImmediate, true))
	}
	return err
}

func (t *traced) RequestHeaders(ctx context.Context, x *Exchange, h *Headers) error {
	return t.run(ctx, x, RequestHeaders, func(ctx context.Context) error { return t.p.RequestHeaders(ctx, x, h) })
}

func (t *traced) RequestBody(ctx context.Context, x *Exchange, b *Body) error {
	return t.run(ctx, x, RequestBody, func(ctx context.Context) error { return t.p.RequestBody(ctx, x, b) })
}

func (t *traced) RequestTrailers(ctx context.Context, x *Exchange, h *Headers) error {
	return t.run(ctx, x, RequestTrailers, func(ctx context.Context) error { return t.p.RequestTrailers(ctx, x, h) })
}

func (t *traced) ResponseHeaders(ctx context.Context, x *Exchange, h *Headers) error {
	return t.run(ctx, x, ResponseHeaders, func(ctx context.Context) error { return t.p.ResponseHeaders(ctx, x, h) })
}

func (t *traced) ResponseBody(ctx context.Context, x *Exchange, b *Body) error {
	return t.run(ctx, x, ResponseBody, func(ctx context.Context) error { return t.p.ResponseBody(ctx, x, b) })
}

func (t *traced) ResponseTrailers(ctx context.Context, x *Exchange, h *Headers) error {
	return t.run(ctx, x, ResponseTrailers, func(ctx context.Context) error { return t.p.ResponseTrailers(ctx, x, h) })
}
