package sdk

import "context"

// Phase is the part of the HTTP exchange a message carries.
type Phase int

// The six phases, in the order Envoy sends them.
const (
	RequestHeaders Phase = iota + 1
	RequestBody
	RequestTrailers
	ResponseHeaders
	ResponseBody
	ResponseTrailers
)

var phaseNames = [...]string{"", "request_headers", "request_body", "request_trailers", "response_headers", "response_body", "response_trailers"}

func (p Phase) String() string {
	if p < RequestHeaders || p > ResponseTrailers {
		return "unknown"
	}
	return phaseNames[p]
}

// IsRequest reports whether p belongs to the request (downstream to
// upstream) direction.
func (p Phase) IsRequest() bool { return p >= RequestHeaders && p <= RequestTrailers }

// Processor handles the phases of one HTTP exchange. Methods are called in
// protocol order, never concurrently for one Exchange; a Processor is shared
// by all streams, so keep per-request state in the Exchange.
//
// Returning an error aborts the stream with a gRPC status (see Server);
// Envoy then fails the request unless failure_mode_allow is set. To answer
// the client instead, call Exchange.Respond and return nil.
type Processor interface {
	RequestHeaders(ctx context.Context, x *Exchange, h *Headers) error
	RequestBody(ctx context.Context, x *Exchange, b *Body) error
	RequestTrailers(ctx context.Context, x *Exchange, t *Headers) error
	ResponseHeaders(ctx context.Context, x *Exchange, h *Headers) error
	ResponseBody(ctx context.Context, x *Exchange, b *Body) error
	ResponseTrailers(ctx context.Context, x *Exchange, t *Headers) error
}

// Continue implements every Processor method as "continue unchanged". Embed
// it and override the phases you need.
type Continue struct{}

// RequestHeaders continues unchanged.
func (Continue) RequestHeaders(context.Context, *Exchange, *Headers) error { return nil }

// RequestBody continues unchanged.
func (Continue) RequestBody(context.Context, *Exchange, *Body) error { return nil }

// RequestTrailers continues unchanged.
func (Continue) RequestTrailers(context.Context, *Exchange, *Headers) error { return nil }

// ResponseHeaders continues unchanged.
func (Continue) ResponseHeaders(context.Context, *Exchange, *Headers) error { return nil }

// ResponseBody continues unchanged.
func (Continue) ResponseBody(context.Context, *Exchange, *Body) error { return nil }

// ResponseTrailers continues unchanged.
func (Continue) ResponseTrailers(context.Context, *Exchange, *Headers) error { return nil }

// Chain runs processors in order on every message. Each one sees the
// mutations of those before it. The chain stops at the first error or at
// the first processor that calls Exchange.Respond.
func Chain(processors ...Processor) Processor { return chain(processors) }

type chain []Processor

func (c chain) run(x *Exchange, f func(p Processor) error) error {
	for _, p := range c {
		if err := f(p); err != nil {
			return err
		}
		if x.immediate != nil {
			return nil
		}
	}
	return nil
}

func (c chain) RequestHeaders(ctx context.Context, x *Exchange, h *Headers) error {
	return c.run(x, func(p Processor) error { return p.RequestHeaders(ctx, x, h) })
}

func (c chain) RequestBody(ctx context.Context, x *Exchange, b *Body) error {
	return c.run(x, func(p Processor) error { return p.RequestBody(ctx, x, b) })
}

func (c chain) RequestTrailers(ctx context.Context, x *Exchange, t *Headers) error {
	return c.run(x, func(p Processor) error { return p.RequestTrailers(ctx, x, t) })
}

func (c chain) ResponseHeaders(ctx context.Context, x *Exchange, h *Headers) error {
	return c.run(x, func(p Processor) error { return p.ResponseHeaders(ctx, x, h) })
}

func (c chain) ResponseBody(ctx context.Context, x *Exchange, b *Body) error {
	return c.run(x, func(p Processor) error { return p.ResponseBody(ctx, x, b) })
}

func (c chain) ResponseTrailers(ctx context.Context, x *Exchange, t *Headers) error {
	return c.run(x, func(p Processor) error { return p.ResponseTrailers(ctx, x, t) })
}
