package sdk

import (
	"math"
	"strings"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the fallback
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ServerOptions are the gRPC server options the driver is measured with:
// pass them to grpc.NewServer (serverkit.Options.GRPCOptions). They install
// Codec; every other message type of the server (health, reflection ...)
// keeps the standard protobuf encoding.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ForceServerCodecV2(Codec)}
}

// Codec is a gRPC codec for the ext_proc service, wire-compatible with the
// standard protobuf one. The headers and trailers messages Envoy sends on
// every request are checked in one pass and their header map kept as
// bytes, decoded only when a processor reads it (Server); decoded into a
// plain ProcessingRequest, the map takes a few allocations instead of
// three per header. The driver's unchanging "continue" answers are sent
// as bytes encoded once. Any other message, and any headers message with
// fields it does not expect, goes through the standard codec.
var Codec encoding.CodecV2 = codec{}

type codec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	switch r := v.(type) {
	case *extprocsvcv3.ProcessingResponse:
		for i, c := range continueResponses {
			if r == c {
				return mem.BufferSlice{continueEncoded[i]}, nil
			}
		}
	case *headersResponse:
		if b, ok := r.encode(); ok {
			return mem.BufferSlice{mem.SliceBuffer(b)}, nil
		}
		return protoCodec.Marshal(&r.ProcessingResponse)
	}
	return protoCodec.Marshal(v)
}

// headersResponse is the driver's answer to a headers message that
// changed something, its messages allocated together. Codec encodes it by
// hand when it has only a header mutation and clear_route_cache (what
// headers processors produce); the standard codec marshals the embedded
// ProcessingResponse (a headersResponse is a proto.Message through it).
type headersResponse struct {
	extprocsvcv3.ProcessingResponse
	req    extprocsvcv3.ProcessingResponse_RequestHeaders
	res    extprocsvcv3.ProcessingResponse_ResponseHeaders
	hr     extprocsvcv3.HeadersResponse
	common extprocsvcv3.CommonResponse
}

// encode writes r as protobuf does (fields in number order, proto3
// defaults left out), or reports false when r has anything else than the
// headers answer's mutation and clear_route_cache.
func (r *headersResponse) encode() ([]byte, bool) {
	field, ok := r.headersField()
	if !ok || r.hasOtherFields() {
		return nil, false
	}
	c := &r.common
	mut := c.HeaderMutation
	mutSize, ok := mutationSize(mut)
	if !ok {
		return nil, false
	}
	commonSize := 0
	if mut != nil {
		commonSize += sizeField(fieldCommonMutation, mutSize)
	}
	if c.ClearRouteCache {
		commonSize += protowire.SizeTag(fieldCommonClearRoute) + 1
	}
	hrSize := sizeField(fieldHeadersCommon, commonSize)
	b := make([]byte, 0, sizeField(field, hrSize))
	b = appendLen(b, field, hrSize)
	b = appendLen(b, fieldHeadersCommon, commonSize)
	if mut != nil {
		b = appendMutation(b, mut, mutSize)
	}
	if c.ClearRouteCache {
		b = protowire.AppendTag(b, fieldCommonClearRoute, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, true
}

// headersField is the ProcessingResponse field r answers in, request or
// response headers; false when r is not a headers answer made of its own
// messages.
func (r *headersResponse) headersField() (protowire.Number, bool) {
	switch {
	case r.Response == &r.req && r.req.RequestHeaders == &r.hr:
		return fieldRespRequestHeaders, true
	case r.Response == &r.res && r.res.ResponseHeaders == &r.hr:
		return fieldRespResponseHeaders, true
	}
	return 0, false
}

// hasOtherFields tells whether r sets anything encode does not write.
// Every such field sends the answer to protobuf, so that none is dropped
// (TestCodecEncodesEveryAnswerField walks them all).
func (r *headersResponse) hasOtherFields() bool {
	c := &r.common
	return r.DynamicMetadata != nil || len(r.TypedDynamicMetadata) > 0 || r.ModeOverride != nil ||
		r.OverrideMessageTimeout != nil || r.ServerWindowUpdate != nil ||
		r.RequestDrain || //nolint:staticcheck // SA1019: read only, so that an answer setting the deprecated field is not dropped
		r.RequestDrainRequests || r.RequestDrainResponses ||
		r.hr.Response != c || c.Status != 0 || c.BodyMutation != nil || c.Trailers != nil
}

// mutationSize is the encoded size of mut's fields (0 for nil); false when
// a header option has a field encode does not write, or an append action
// outside the enum's non-negative values (left to protobuf).
func mutationSize(mut *extprocsvcv3.HeaderMutation) (int, bool) {
	if mut == nil {
		return 0, true
	}
	n := 0
	for _, o := range mut.SetHeaders {
		if o.GetHeader() == nil || o.KeepEmptyValue || o.AppendAction < 0 ||
			o.Append != nil { //nolint:staticcheck // SA1019: read only, so that an option setting the deprecated field is not dropped
			return 0, false
		}
		n += sizeField(fieldSetHeaders, optionSize(o))
	}
	for _, name := range mut.RemoveHeaders {
		n += sizeField(fieldRemoveHeaders, len(name))
	}
	return n, true
}

// appendMutation appends the header_mutation field, of mutSize bytes.
func appendMutation(b []byte, mut *extprocsvcv3.HeaderMutation, mutSize int) []byte {
	b = appendLen(b, fieldCommonMutation, mutSize)
	for _, o := range mut.SetHeaders {
		b = appendLen(b, fieldSetHeaders, optionSize(o))
		h := o.Header
		b = appendLen(b, fieldOptionHeader, headerValueSize(h))
		b = appendString(b, fieldKey, h.Key)
		b = appendString(b, fieldValue, h.Value)
		if len(h.RawValue) > 0 {
			b = appendLen(b, fieldRawValue, len(h.RawValue))
			b = append(b, h.RawValue...)
		}
		if o.AppendAction != 0 {
			b = protowire.AppendTag(b, fieldOptionAction, protowire.VarintType)
			b = protowire.AppendVarint(b, actionVarint(o.AppendAction))
		}
	}
	for _, name := range mut.RemoveHeaders {
		b = appendLen(b, fieldRemoveHeaders, len(name))
		b = append(b, name...)
	}
	return b
}

func optionSize(o *corev3.HeaderValueOption) int {
	n := sizeField(fieldOptionHeader, headerValueSize(o.Header))
	if o.AppendAction != 0 {
		n += protowire.SizeTag(fieldOptionAction) + protowire.SizeVarint(actionVarint(o.AppendAction))
	}
	return n
}

// actionVarint is the varint of an append action, which mutationSize
// checked is not negative (a negative enum is ten bytes on the wire).
func actionVarint(a corev3.HeaderValueOption_HeaderAppendAction) uint64 {
	if a < 0 {
		panic("sdk: negative append action in the hand encoder")
	}
	return uint64(a)
}

func headerValueSize(h *corev3.HeaderValue) int {
	n := 0
	for num, l := range [...]int{fieldKey: len(h.Key), fieldValue: len(h.Value), fieldRawValue: len(h.RawValue)} {
		if l > 0 {
			n += sizeField(protowire.Number(num), l)
		}
	}
	return n
}

// sizeField is the size of a length-delimited field of n bytes.
func sizeField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// appendLen appends the tag and length of a length-delimited field.
func appendLen(b []byte, num protowire.Number, n int) []byte {
	if n < 0 {
		panic("sdk: negative length in the hand encoder") // sizes are sums of lengths
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(n))
}

// appendString appends a string field unless empty (a proto3 default).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return append(appendLen(b, num, len(s)), s...)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *request:
		if withBytes(data, func(b []byte) bool { return decodeLazy(b, m) }) {
			return nil
		}
		m.lazy = false // the driver reuses its request
		return protoCodec.Unmarshal(data, &m.ProcessingRequest)
	case *extprocsvcv3.ProcessingRequest:
		if withBytes(data, func(b []byte) bool { return decodeHeadersRequest(b, m) }) {
			return nil
		}
	}
	return protoCodec.Unmarshal(data, v)
}

// withBytes calls f on the message's bytes, in place when gRPC holds them
// in one buffer (the usual case), else on a pooled copy.
func withBytes(data mem.BufferSlice, f func([]byte) bool) bool {
	if len(data) == 1 {
		return f(data[0].ReadOnlyData())
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return f(buf.ReadOnlyData())
}

// request is what Server.Process receives a stream's messages into, one
// after the other (it holds nothing the exchange keeps). With the
// standard codec its embedded ProcessingRequest is decoded in full (a
// request is a proto.Message through it). With Codec, a headers or
// trailers message as Envoy sends it is only checked: the embedded
// message gets everything but the header map, which is kept as bytes in
// rawMap (a copy: gRPC reuses its buffer) and decoded when a processor
// first reads the headers. A processor that never reads them costs no
// decoding, and one that does gets strings sharing one copy.
type request struct {
	extprocsvcv3.ProcessingRequest
	lazy   bool   // Codec filled the message: the map is rawMap
	rawMap string // the HeaderMap's protobuf bytes

	mapLen int             // header values in rawMap
	msgs   requestMessages // the messages Codec sets, with the request
}

// continueResponses answer a message that changed nothing, by phase; they
// are shared by every stream and never modified.
var continueResponses = [...]*extprocsvcv3.ProcessingResponse{
	RequestHeaders:   {Response: &extprocsvcv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvcv3.HeadersResponse{}}},
	RequestBody:      {Response: &extprocsvcv3.ProcessingResponse_RequestBody{RequestBody: &extprocsvcv3.BodyResponse{}}},
	RequestTrailers:  {Response: &extprocsvcv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocsvcv3.TrailersResponse{}}},
	ResponseHeaders:  {Response: &extprocsvcv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvcv3.HeadersResponse{}}},
	ResponseBody:     {Response: &extprocsvcv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocsvcv3.BodyResponse{}}},
	ResponseTrailers: {Response: &extprocsvcv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocsvcv3.TrailersResponse{}}},
}

// continueEncoded are their bytes, as gRPC buffers made once (a
// SliceBuffer is never changed; freeing it does nothing).
var continueEncoded = func() (out [len(continueResponses)]mem.Buffer) {
	for i, r := range continueResponses {
		if r != nil {
			b, _ := proto.Marshal(r)
			out[i] = mem.SliceBuffer(b)
		}
	}
	return out
}()

// Field numbers of the messages Codec reads and writes by hand.
const (
	// Requests.
	fieldRequestHeaders    = 2  // ProcessingRequest.request_headers
	fieldResponseHeaders   = 3  // ProcessingRequest.response_headers
	fieldRequestTrailers   = 6  // ProcessingRequest.request_trailers
	fieldResponseTrailers  = 7  // ProcessingRequest.response_trailers
	fieldMetadataContext   = 8  // ProcessingRequest.metadata_context
	fieldObservabilityMode = 10 // ProcessingRequest.observability_mode
	fieldProtocolConfig    = 11 // ProcessingRequest.protocol_config
	fieldRequestBodyMode   = 1  // ProtocolConfiguration.request_body_mode
	fieldResponseBodyMode  = 2  // ProtocolConfiguration.response_body_mode
	fieldSendWithoutWait   = 3  // ProtocolConfiguration.send_body_without_waiting_for_header_response
	fieldHeaderMap         = 1  // HttpHeaders.headers, HttpTrailers.trailers
	fieldEndOfStream       = 3  // HttpHeaders.end_of_stream

	// Header maps, in both.
	fieldHeaderValue = 1 // HeaderMap.headers
	fieldKey         = 1 // HeaderValue.key
	fieldValue       = 2 // HeaderValue.value
	fieldRawValue    = 3 // HeaderValue.raw_value

	// Answers.
	fieldRespRequestHeaders  = 1 // ProcessingResponse.request_headers
	fieldRespResponseHeaders = 2 // ProcessingResponse.response_headers
	fieldHeadersCommon       = 1 // HeadersResponse.response
	fieldCommonMutation      = 2 // CommonResponse.header_mutation
	fieldCommonClearRoute    = 5 // CommonResponse.clear_route_cache
	fieldSetHeaders          = 1 // HeaderMutation.set_headers
	fieldRemoveHeaders       = 2 // HeaderMutation.remove_headers
	fieldOptionHeader        = 1 // HeaderValueOption.header
	fieldOptionAction        = 3 // HeaderValueOption.append_action
)

// scanned is what scanRequest found in a message.
type scanned struct {
	member    protowire.Number // which headers or trailers field
	eos       bool
	observe   bool
	metadata  bool // an empty metadata_context
	config    bool // a protocol_config, with:
	reqMode   BodyMode
	respMode  BodyMode
	noWait    bool
	hasMap    bool   // the header map field is present
	headerMap []byte // its bytes
	count     int    // header values in it
	strSize   int    // bytes of their keys and values
	rawSize   int    // bytes of their raw values
}

// scanRequest checks, in one pass, that b is a request or response
// headers or trailers message with only the fields Envoy sets on it
// (the header map, end of stream, observability mode, protocol config, an
// empty metadata context), each at most once, and header keys and values
// that are valid UTF-8 (as protobuf requires of strings). It reports
// false for anything else: the standard codec then decodes it, or
// reports the error.
func scanRequest(b []byte) (s scanned, ok bool) {
	member, ok := s.scanTop(b)
	if !ok || s.member == 0 {
		return s, false
	}
	if !s.scanMember(member) {
		return s, false
	}
	return s, s.scanHeaderMap()
}

// scanTop reads the ProcessingRequest's own fields, and returns the
// bytes of its headers or trailers member.
func (s *scanned) scanTop(b []byte) (member []byte, ok bool) {
	var seen uint16
	for len(b) > 0 {
		num, typ, v, x, n := wireField(b)
		if n < 0 || seen&(1<<num) != 0 {
			return nil, false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case isHeadersMember(num) && typ == protowire.BytesType:
			if s.member != 0 {
				return nil, false // two members of the oneof: protobuf keeps the last
			}
			s.member, member = num, v
		case num == fieldMetadataContext && typ == protowire.BytesType && len(v) == 0:
			s.metadata = true // Envoy sends it empty unless the filter forwards namespaces
		case num == fieldObservabilityMode && typ == protowire.VarintType:
			s.observe = x != 0
		case num == fieldProtocolConfig && typ == protowire.BytesType:
			if !s.scanConfig(v) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return member, true
}

// isHeadersMember tells whether num is one of the request oneof's headers
// or trailers fields.
func isHeadersMember(num protowire.Number) bool {
	return num == fieldRequestHeaders || num == fieldResponseHeaders || num == fieldRequestTrailers || num == fieldResponseTrailers
}

// scanMember reads the HttpHeaders or HttpTrailers message b: its header
// map, and end of stream for headers.
func (s *scanned) scanMember(b []byte) bool {
	headers := s.member == fieldRequestHeaders || s.member == fieldResponseHeaders
	var seen uint16
	for len(b) > 0 {
		num, typ, v, x, n := wireField(b)
		if n < 0 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == fieldHeaderMap && typ == protowire.BytesType:
			s.hasMap, s.headerMap = true, v
		case headers && num == fieldEndOfStream && typ == protowire.VarintType:
			s.eos = x != 0
		default:
			return false
		}
	}
	return true
}

// scanHeaderMap checks the header map's values and counts them and their
// bytes.
func (s *scanned) scanHeaderMap() bool {
	for m := s.headerMap; len(m) > 0; {
		num, typ, hv, _, n := wireField(m)
		if n < 0 || num != fieldHeaderValue || typ != protowire.BytesType {
			return false
		}
		m = m[n:]
		s.count++
		if !s.scanHeaderValue(hv) {
			return false
		}
	}
	return true
}

// scanHeaderValue checks a HeaderValue: key, value and raw value, each at
// most once, key and value valid UTF-8.
func (s *scanned) scanHeaderValue(hv []byte) bool {
	var seen uint8
	for len(hv) > 0 {
		num, typ, v, _, n := wireField(hv)
		if n < 0 || num < fieldKey || num > fieldRawValue || typ != protowire.BytesType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		hv = hv[n:]
		if num == fieldRawValue {
			s.rawSize += len(v)
			continue
		}
		if !utf8.Valid(v) {
			return false
		}
		s.strSize += len(v)
	}
	return true
}

// scanConfig reads a ProtocolConfiguration: varints 1 to 3, each once.
func (s *scanned) scanConfig(b []byte) bool {
	s.config = true
	var seen uint8
	for len(b) > 0 {
		num, typ, _, x, n := wireField(b)
		if n < 0 || typ != protowire.VarintType || num < fieldRequestBodyMode || num > fieldSendWithoutWait || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch num {
		case fieldRequestBodyMode:
			s.reqMode = enumValue(x)
		case fieldResponseBodyMode:
			s.respMode = enumValue(x)
		default:
			s.noWait = x != 0
		}
	}
	return true
}

// enumValue is the varint x as protobuf decodes an enum: its low 32 bits
// as an int32 (a negative enum is sent sign-extended to 64 bits).
func enumValue(x uint64) BodyMode {
	lo := x & math.MaxUint32
	if lo <= math.MaxInt32 {
		return BodyMode(lo)
	}
	// Two's complement: lo - 1<<32, which is -(MaxUint32 - lo) - 1, with
	// MaxUint32 - lo from 0 to MaxInt32.
	return -BodyMode(math.MaxUint32-lo) - 1
}

// requestMessages holds the messages of a headers or trailers request, so
// that they take one allocation (with the request that holds them).
type requestMessages struct {
	reqH  extprocsvcv3.ProcessingRequest_RequestHeaders
	respH extprocsvcv3.ProcessingRequest_ResponseHeaders
	reqT  extprocsvcv3.ProcessingRequest_RequestTrailers
	respT extprocsvcv3.ProcessingRequest_ResponseTrailers
	hh    extprocsvcv3.HttpHeaders
	ht    extprocsvcv3.HttpTrailers
	md    corev3.Metadata // empty when set: the exchange may keep it
}

// fill sets m to the message s scanned, made of e's messages, with hm as
// its header map.
func (s *scanned) fill(m *extprocsvcv3.ProcessingRequest, e *requestMessages, hm *corev3.HeaderMap) {
	m.Reset()
	m.ObservabilityMode = s.observe
	if s.config {
		m.ProtocolConfig = &extprocsvcv3.ProtocolConfiguration{RequestBodyMode: s.reqMode, ResponseBodyMode: s.respMode, SendBodyWithoutWaitingForHeaderResponse: s.noWait}
	}
	if s.metadata {
		e.md.Reset() // a processor may have written to the last one (x.Metadata)
		m.MetadataContext = &e.md
	}
	switch s.member {
	case fieldRequestHeaders:
		e.hh.Headers, e.hh.EndOfStream = hm, s.eos
		e.reqH.RequestHeaders, m.Request = &e.hh, &e.reqH
	case fieldResponseHeaders:
		e.hh.Headers, e.hh.EndOfStream = hm, s.eos
		e.respH.ResponseHeaders, m.Request = &e.hh, &e.respH
	case fieldRequestTrailers:
		e.ht.Trailers = hm
		e.reqT.RequestTrailers, m.Request = &e.ht, &e.reqT
	default:
		e.ht.Trailers = hm
		e.respT.ResponseTrailers, m.Request = &e.ht, &e.respT
	}
}

// decodeLazy fills m from b, keeping the header map as bytes (see
// request); false when scanRequest refuses b.
func decodeLazy(b []byte, m *request) bool {
	s, ok := scanRequest(b)
	if !ok {
		return false
	}
	s.fill(&m.ProcessingRequest, &m.msgs, nil)
	m.lazy, m.rawMap, m.mapLen = true, string(s.headerMap), s.count
	return true
}

// decodeHeadersRequest decodes b into m in full when scanRequest takes it:
// keys and values share one string, raw values one slice, headers and
// their pointers one slice each.
func decodeHeadersRequest(b []byte, m *extprocsvcv3.ProcessingRequest) bool {
	s, ok := scanRequest(b)
	if !ok {
		return false
	}
	e := new(struct {
		requestMessages
		hm corev3.HeaderMap
	})
	var hm *corev3.HeaderMap
	if s.hasMap {
		e.hm.Headers = headerValues(&s)
		hm = &e.hm
	}
	s.fill(m, &e.requestMessages, hm)
	return true
}

// headerValues decodes the header map scanRequest checked (copies: its
// bytes are gRPC's buffer).
func headerValues(s *scanned) []*corev3.HeaderValue {
	var sb strings.Builder
	sb.Grow(s.strSize)
	raw := make([]byte, 0, s.rawSize)
	for m := s.headerMap; len(m) > 0; {
		_, _, hv, _, n := wireField(m)
		m = m[n:]
		for len(hv) > 0 {
			num, _, v, _, n := wireField(hv)
			hv = hv[n:]
			if num == fieldRawValue {
				raw = append(raw, v...)
			} else {
				sb.Write(v)
			}
		}
	}
	str := sb.String()
	values := make([]corev3.HeaderValue, s.count)
	ptrs := make([]*corev3.HeaderValue, s.count)
	i, off, roff := 0, 0, 0
	for m := s.headerMap; len(m) > 0; i++ {
		_, _, hv, _, n := wireField(m)
		m = m[n:]
		for len(hv) > 0 {
			num, _, v, _, n := wireField(hv)
			hv = hv[n:]
			switch num {
			case fieldKey:
				values[i].Key = str[off : off+len(v)]
				off += len(v)
			case fieldValue:
				values[i].Value = str[off : off+len(v)]
				off += len(v)
			default:
				values[i].RawValue = raw[roff : roff+len(v) : roff+len(v)]
				roff += len(v)
			}
		}
		ptrs[i] = &values[i]
	}
	return ptrs
}

// wireField reads the first field of the protobuf message b: its number,
// wire type, a length-delimited field's bytes or a varint's value, and its
// length; n < 0 when b is malformed, or the field is of another wire type
// or numbered above 15 (no field the fast path knows).
func wireField(b []byte) (num protowire.Number, typ protowire.Type, v []byte, x uint64, n int) {
	num, typ, n = protowire.ConsumeTag(b)
	if n < 0 || num > 15 {
		return 0, 0, nil, 0, -1
	}
	var m int
	switch typ {
	case protowire.BytesType:
		v, m = protowire.ConsumeBytes(b[n:])
	case protowire.VarintType:
		x, m = protowire.ConsumeVarint(b[n:])
	default:
		return 0, 0, nil, 0, -1
	}
	if m < 0 {
		return 0, 0, nil, 0, -1
	}
	return num, typ, v, x, n + m
}

// stringField reads the first length-delimited field of s, a message
// scanRequest has checked: its number, its bytes, and the rest of s.
func stringField(s string) (num protowire.Number, v, rest string) {
	tag, n := uvarint(s)
	size, m := uvarint(s[n:])
	// scanRequest took only fields numbered up to 15, inside a message
	// gRPC bounds far below 2 GiB; slicing s checks the rest.
	if tag>>3 > 15 || size > math.MaxInt32 {
		panic("sdk: a header map scanRequest did not check")
	}
	start := n + m
	end := start + int(size)
	return protowire.Number(tag >> 3), s[start:end], s[end:]
}

// uvarint decodes a varint at the start of s (checked by scanRequest).
func uvarint(s string) (x uint64, n int) {
	for shift := 0; n < len(s); shift += 7 {
		c := s[n]
		n++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	return x, n
}
