package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// Outcome of one message, as reported to an Observer.
const (
	OutcomeContinue  = "continue"  // answered, the exchange goes on
	OutcomeImmediate = "immediate" // answered with an immediate response
	OutcomeError     = "error"     // the stream ended with an error status
)

// Observer is told about every processed message (for metrics).
type Observer func(phase Phase, took time.Duration, outcome string)

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger for stream errors (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// WithObserver sets an Observer.
func WithObserver(o Observer) Option { return func(s *Server) { s.observe = o } }

// Server is the ext_proc stream driver: register it with
// extprocsvcv3.RegisterExternalProcessorServer.
//
// Errors end the stream with a gRPC status: a processor error that carries
// a status (status.Error) keeps its code; context cancellation becomes
// Canceled or DeadlineExceeded; any other error or a panic becomes Internal.
// A header change Envoy must not see (a name that is not an HTTP token, a
// value with CR, LF, NUL or too long) is Internal and nothing of that
// message is sent. A message with no known request type is
// InvalidArgument, and GRPC body mode is Unimplemented.
//
// Every message gets one answer, except in FULL_DUPLEX_STREAMED body mode
// (see Body), where a body message or trailers may be answered by several
// streamed body responses (chunks of at most MaxStreamedChunk bytes), and
// trailers first by the body the chain emits on its Last call.
type Server struct {
	extprocsvcv3.UnimplementedExternalProcessorServer
	proc    Processor
	logger  *slog.Logger
	observe Observer
}

// NewServer returns a driver running p on every stream.
func NewServer(p Processor, opts ...Option) *Server {
	s := &Server{proc: p, logger: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Process implements extprocsvcv3.ExternalProcessorServer.
func (s *Server) Process(stream extprocsvcv3.ExternalProcessor_ProcessServer) error {
	ctx := stream.Context()
	x := newExchange(time.Now())
	// Not stream.Recv: a request is decoded lazily by Codec (and in full
	// by the standard codec), into the same request every time.
	req := new(request)
	for {
		err := stream.RecvMsg(req)
		if errors.Is(err, io.EOF) {
			return nil // Envoy closed its side: the exchange is over
		}
		if err != nil {
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return err
		}
		start := time.Now()
		resp, err := s.handle(ctx, x, req)
		if err != nil {
			err = toStatus(ctx, err)
			s.report(x.phase, start, OutcomeError)
			if status.Code(err) != codes.Canceled {
				s.logger.Warn("ext_proc stream failed", "phase", x.phase.String(), "error", err)
			}
			return err
		}
		outcome := OutcomeContinue
		if x.immediate != nil {
			outcome = OutcomeImmediate
		}
		s.report(x.phase, start, outcome)
		if req.GetObservabilityMode() {
			x.pending = x.pending[:0]
			continue // Envoy ignores answers in observability mode
		}
		for _, r := range x.pending {
			if err := stream.Send(r); err != nil {
				return toStatus(ctx, err)
			}
		}
		x.pending = x.pending[:0]
		// SendMsg: resp may be a headersResponse (see Codec).
		if err := stream.SendMsg(resp); err != nil {
			return toStatus(ctx, err)
		}
		if x.immediate != nil {
			// Envoy ignores anything after an immediate response; close
			// the stream cleanly instead of waiting for its reset.
			return nil
		}
	}
}

func (s *Server) report(p Phase, start time.Time, outcome string) {
	if s.observe != nil {
		s.observe(p, time.Since(start), outcome)
	}
}

func toStatus(ctx context.Context, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// handle runs the processor on one message and builds its one response:
// a *extprocsvcv3.ProcessingResponse, or a *headersResponse.
func (s *Server) handle(ctx context.Context, x *Exchange, req *request) (resp any, err error) {
	if pc := req.GetProtocolConfig(); pc != nil {
		x.RequestBodyMode, x.ResponseBodyMode = pc.GetRequestBodyMode(), pc.GetResponseBodyMode()
		if x.RequestBodyMode == ModeGRPC || x.ResponseBodyMode == ModeGRPC {
			return nil, status.Error(codes.Unimplemented, "GRPC body mode is not supported; use STREAMED, BUFFERED, BUFFERED_PARTIAL or FULL_DUPLEX_STREAMED")
		}
	}
	if req.GetMetadataContext() != nil {
		x.Metadata = req.GetMetadataContext()
	}
	for k, v := range req.GetAttributes() {
		if x.Attributes == nil {
			x.Attributes = map[string]*structpb.Struct{}
		}
		x.Attributes[k] = v
	}
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("panic in ext_proc processor", "phase", x.phase.String(), "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, status.Error(codes.Internal, "processor panicked")
		}
	}()

	switch r := req.GetRequest().(type) {
	case *extprocsvcv3.ProcessingRequest_RequestHeaders:
		return s.headers(ctx, x, RequestHeaders, req, r.RequestHeaders)
	case *extprocsvcv3.ProcessingRequest_ResponseHeaders:
		return s.headers(ctx, x, ResponseHeaders, req, r.ResponseHeaders)
	case *extprocsvcv3.ProcessingRequest_RequestBody:
		return s.body(ctx, x, RequestBody, r.RequestBody)
	case *extprocsvcv3.ProcessingRequest_ResponseBody:
		return s.body(ctx, x, ResponseBody, r.ResponseBody)
	case *extprocsvcv3.ProcessingRequest_RequestTrailers:
		return s.trailers(ctx, x, RequestTrailers, req, r.RequestTrailers)
	case *extprocsvcv3.ProcessingRequest_ResponseTrailers:
		return s.trailers(ctx, x, ResponseTrailers, req, r.ResponseTrailers)
	default:
		x.phase = 0
		return nil, status.Errorf(codes.InvalidArgument, "ProcessingRequest without a known request type (%T)", r)
	}
}

func (s *Server) headers(ctx context.Context, x *Exchange, p Phase, req *request, msg *extprocsvcv3.HttpHeaders) (any, error) {
	x.resetActions(p)
	slot := &x.headers[0]
	if p == ResponseHeaders {
		slot = &x.headers[1]
	}
	h := newHeaders(slot, req, msg.GetHeaders(), msg.GetEndOfStream())
	// The exchange keeps h: live during the phase, so helpers such as
	// x.Path() see the changes so far, and what left the phase afterwards
	// (processors do not use h once the phase returns).
	if p == RequestHeaders {
		x.requestHeaders = h
	} else {
		x.responseHeaders = h
	}
	var err error
	if p == RequestHeaders {
		err = s.proc.RequestHeaders(ctx, x, h)
	} else {
		err = s.proc.ResponseHeaders(ctx, x, h)
	}
	if err != nil {
		return nil, err
	}
	if x.immediate != nil {
		return x.immediateResponse()
	}
	// The response's messages in one allocation: this runs on every
	// headers message.
	mut, err := h.mutation()
	if err != nil {
		return nil, errInvalidHeader(err)
	}
	if mut == nil && (!x.clearRoute || p != RequestHeaders) && x.override == nil && len(x.metadata) == 0 {
		return continueResponses[p], nil
	}
	r := new(headersResponse)
	r.common.HeaderMutation, r.common.ClearRouteCache = mut, x.clearRoute && p == RequestHeaders
	r.hr.Response = &r.common
	resp := &r.ProcessingResponse
	if p == RequestHeaders {
		r.req.RequestHeaders = &r.hr
		resp.Response = &r.req
	} else {
		r.res.ResponseHeaders = &r.hr
		resp.Response = &r.res
	}
	if x.override != nil {
		resp.ModeOverride = x.override
		x.applyOverride(p, x.override)
	}
	x.finish(resp)
	return r, nil
}

// applyOverride tracks the body modes an override asks for. An override in
// the response-headers phase can only change the response side.
func (x *Exchange) applyOverride(p Phase, m *extprocv3.ProcessingMode) {
	if p == RequestHeaders {
		x.RequestBodyMode = m.GetRequestBodyMode()
	}
	x.ResponseBodyMode = m.GetResponseBodyMode()
}

func (s *Server) body(ctx context.Context, x *Exchange, p Phase, msg *extprocsvcv3.HttpBody) (*extprocsvcv3.ProcessingResponse, error) {
	x.resetActions(p)
	eos := msg.GetEndOfStream()
	b, err := s.runBody(ctx, x, p, msg.GetBody(), eos, eos)
	if err != nil {
		return nil, err
	}
	if x.immediate != nil {
		return x.immediateResponse()
	}
	if b.Mode == ModeFullDuplex {
		return x.streamed(p, b.data, b.EndOfStream), nil
	}
	if !b.replaced && (!x.clearRoute || p != RequestBody) && len(x.metadata) == 0 {
		return continueResponses[p], nil
	}
	common := &extprocsvcv3.CommonResponse{ClearRouteCache: x.clearRoute && p == RequestBody}
	if b.replaced {
		common.BodyMutation = &extprocsvcv3.BodyMutation{Mutation: &extprocsvcv3.BodyMutation_Body{Body: b.data}}
		if x.needsContentLength(p, b) {
			// BUFFERED + SEND headers: Envoy keeps Content-Length and
			// rejects a body that does not match it (500), so say the new
			// length. In the other modes Envoy drops Content-Length itself.
			common.HeaderMutation = &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
				headerOption("content-length", strconv.Itoa(len(b.data)), corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
			}}
		}
	}
	br := &extprocsvcv3.BodyResponse{Response: common}
	resp := &extprocsvcv3.ProcessingResponse{}
	if p == RequestBody {
		resp.Response = &extprocsvcv3.ProcessingResponse_RequestBody{RequestBody: br}
	} else {
		resp.Response = &extprocsvcv3.ProcessingResponse_ResponseBody{ResponseBody: br}
	}
	x.finish(resp)
	return resp, nil
}

// runBody runs the chain on one body call of phase p (a body phase).
func (s *Server) runBody(ctx context.Context, x *Exchange, p Phase, data []byte, eos, last bool) (*Body, error) {
	x.chunks[p]++
	b := &Body{EndOfStream: eos, Last: last, Chunk: x.chunks[p], data: data}
	x.bodyEnded[p] = x.bodyEnded[p] || last
	if p == RequestBody {
		b.Mode = x.RequestBodyMode
		return b, s.proc.RequestBody(ctx, x, b)
	}
	b.Mode = x.ResponseBodyMode
	return b, s.proc.ResponseBody(ctx, x, b)
}

// MaxStreamedChunk is the largest body chunk the driver sends in one
// FULL_DUPLEX_STREAMED response, Envoy's recommended maximum.
const MaxStreamedChunk = 64 << 10

// streamed answers a FULL_DUPLEX_STREAMED body call with data, in chunks of
// at most MaxStreamedChunk bytes (all but the last queued in x.pending),
// the last carrying eos and the message's dynamic metadata. Always at
// least one response, so every body message is answered. No header
// mutation: the headers have left, and Envoy drops Content-Length itself
// in this mode.
func (x *Exchange) streamed(p Phase, data []byte, eos bool) *extprocsvcv3.ProcessingResponse {
	for len(data) > MaxStreamedChunk {
		x.pending = append(x.pending, streamedResponse(p, data[:MaxStreamedChunk], false))
		data = data[MaxStreamedChunk:]
	}
	resp := streamedResponse(p, data, eos)
	x.finish(resp)
	return resp
}

func streamedResponse(p Phase, data []byte, eos bool) *extprocsvcv3.ProcessingResponse {
	br := &extprocsvcv3.BodyResponse{Response: &extprocsvcv3.CommonResponse{BodyMutation: &extprocsvcv3.BodyMutation{
		Mutation: &extprocsvcv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocsvcv3.StreamedBodyResponse{Body: data, EndOfStream: eos}},
	}}}
	if p == RequestBody {
		return &extprocsvcv3.ProcessingResponse{Response: &extprocsvcv3.ProcessingResponse_RequestBody{RequestBody: br}}
	}
	return &extprocsvcv3.ProcessingResponse{Response: &extprocsvcv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
}

// needsContentLength: the headers of this direction were processed and
// carried a Content-Length, and the body is buffered whole.
func (x *Exchange) needsContentLength(p Phase, b *Body) bool {
	hdrs := x.requestHeaders
	if p == ResponseBody {
		hdrs = x.responseHeaders
	}
	if contentLength(hdrs) < 0 {
		return false
	}
	switch b.Mode {
	case ModeBuffered:
		return true
	case ModeUnknown:
		return b.Whole() // an Envoy without protocol_config: best guess
	}
	return false
}

func (s *Server) trailers(ctx context.Context, x *Exchange, p Phase, req *request, msg *extprocsvcv3.HttpTrailers) (*extprocsvcv3.ProcessingResponse, error) {
	if bp := p - 1; x.bodyMode(bp) == ModeFullDuplex && x.chunks[bp] > 0 && !x.bodyEnded[bp] {
		// Trailers end the body: the chain gets its Last call and what it
		// emits goes first (without end_of_stream: trailers follow). Not
		// without a body message: nothing can be held back, and Envoy
		// refuses a body answer it is not waiting for.
		x.resetActions(bp)
		b, err := s.runBody(ctx, x, bp, nil, false, true)
		if err != nil {
			return nil, err
		}
		if x.immediate != nil {
			return x.immediateResponse()
		}
		if len(b.data) > 0 || len(x.metadata) > 0 {
			x.pending = append(x.pending, x.streamed(bp, b.data, false))
		}
	}
	x.resetActions(p)
	t := newHeaders(new(Headers), req, msg.GetTrailers(), true)
	var err error
	if p == RequestTrailers {
		err = s.proc.RequestTrailers(ctx, x, t)
	} else {
		err = s.proc.ResponseTrailers(ctx, x, t)
	}
	if err != nil {
		return nil, err
	}
	if x.immediate != nil {
		return x.immediateResponse()
	}
	mut, err := t.mutation()
	if err != nil {
		return nil, errInvalidHeader(err)
	}
	if mut == nil && len(x.metadata) == 0 {
		return continueResponses[p], nil
	}
	tr := &extprocsvcv3.TrailersResponse{HeaderMutation: mut}
	resp := &extprocsvcv3.ProcessingResponse{}
	if p == RequestTrailers {
		resp.Response = &extprocsvcv3.ProcessingResponse_RequestTrailers{RequestTrailers: tr}
	} else {
		resp.Response = &extprocsvcv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: tr}
	}
	x.finish(resp)
	return resp, nil
}

// finish adds the message-level actions shared by every response type.
func (x *Exchange) finish(resp *extprocsvcv3.ProcessingResponse) {
	if len(x.metadata) > 0 {
		fields := make(map[string]any, len(x.metadata))
		for ns, kv := range x.metadata {
			fields[ns] = kv
		}
		// Values were checked by SetMetadata, so this cannot fail.
		resp.DynamicMetadata, _ = structpb.NewStruct(fields)
	}
}

func (x *Exchange) immediateResponse() (*extprocsvcv3.ProcessingResponse, error) {
	r := x.immediate
	code := r.Status
	if code == 0 {
		code = 200
	}
	ir := &extprocsvcv3.ImmediateResponse{
		Status:  &typev3.HttpStatus{Code: typev3.StatusCode(code)},
		Body:    r.Body,
		Details: r.Details,
	}
	if len(r.Headers) > 0 {
		h := &Headers{loaded: true}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			for i, v := range r.Headers[k] {
				if i == 0 {
					h.Set(k, v)
				} else {
					h.Add(k, v)
				}
			}
		}
		var err error
		if ir.Headers, err = h.mutation(); err != nil {
			return nil, errInvalidHeader(fmt.Errorf("immediate response: %w", err))
		}
	}
	resp := &extprocsvcv3.ProcessingResponse{Response: &extprocsvcv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: ir}}
	x.finish(resp)
	return resp, nil
}

// errInvalidHeader fails a message whose header changes Envoy must not
// see: CR or LF would let a value inject headers. Internal, like any
// processor bug; Envoy answers 500, or with failure_mode_allow continues
// without this message's changes.
func errInvalidHeader(err error) error {
	return status.Errorf(codes.Internal, "processor produced an invalid header, nothing sent: %v", err)
}

// Errorf returns an error that ends the stream with code (see Server).
func Errorf(code codes.Code, format string, args ...any) error {
	return status.Error(code, fmt.Sprintf(format, args...))
}
