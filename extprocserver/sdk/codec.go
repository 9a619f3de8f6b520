package sdk

import (
	"strings"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
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
// standard protobuf one. It decodes the headers messages Envoy sends on
// every request with a few allocations instead of three per header, sends
// the driver's unchanging "continue" answers as bytes encoded once. Any
// other message, and any headers message with fields it does not expect,
// goes through the standard codec.
var Codec encoding.CodecV2 = codec{}

type codec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*extprocv3.ProcessingResponse); ok {
		for i, c := range continueResponses {
			if r == c {
				return mem.BufferSlice{mem.SliceBuffer(continueEncoded[i])}, nil
			}
		}
	}
	return protoCodec.Marshal(v)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*extprocv3.ProcessingRequest); ok {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		done := decodeHeadersRequest(buf.ReadOnlyData(), r)
		buf.Free()
		if done {
			return nil
		}
	}
	return protoCodec.Unmarshal(data, v)
}

// continueResponses answer a message that changed nothing, by phase; they
// are shared by every stream and never modified.
var continueResponses = [...]*extprocv3.ProcessingResponse{
	RequestHeaders:   {Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}},
	RequestBody:      {Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}},
	RequestTrailers:  {Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}},
	ResponseHeaders:  {Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}},
	ResponseBody:     {Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}},
	ResponseTrailers: {Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}},
}

var continueEncoded = func() (out [len(continueResponses)][]byte) {
	for i, r := range continueResponses {
		if r != nil {
			out[i], _ = proto.Marshal(r)
		}
	}
	return out
}()

// Field numbers decodeHeadersRequest knows.
const (
	fieldRequestHeaders    = 2  // ProcessingRequest.request_headers
	fieldResponseHeaders   = 3  // ProcessingRequest.response_headers
	fieldMetadataContext   = 8  // ProcessingRequest.metadata_context
	fieldObservabilityMode = 10 // ProcessingRequest.observability_mode
	fieldProtocolConfig    = 11 // ProcessingRequest.protocol_config
	fieldHeaderMap         = 1  // HttpHeaders.headers
	fieldEndOfStream       = 3  // HttpHeaders.end_of_stream
	fieldHeaderValue       = 1  // HeaderMap.headers
	fieldKey               = 1  // HeaderValue.key
	fieldValue             = 2  // HeaderValue.value
	fieldRawValue          = 3  // HeaderValue.raw_value
)

// headersRequest holds the messages of a decoded headers request, so that
// they take one allocation.
type headersRequest struct {
	req  extprocv3.ProcessingRequest_RequestHeaders
	resp extprocv3.ProcessingRequest_ResponseHeaders
	hh   extprocv3.HttpHeaders
	hm   corev3.HeaderMap
	md   corev3.Metadata
}

// decodeHeadersRequest decodes b into m when b is a request or response
// headers message with only the fields Envoy sets on it (headers, end of
// stream, observability mode, protocol config, an empty metadata context),
// each at most once, and
// header keys and values that are valid UTF-8 (as protobuf requires of
// strings). It reports false, leaving m alone, for anything else: the
// standard codec then decodes it, or reports the error.
func decodeHeadersRequest(b []byte, m *extprocv3.ProcessingRequest) bool {
	var (
		field     protowire.Number
		headers   []byte
		pc        []byte
		observe   bool
		seen      uint16
		eos       bool
		headerMap []byte
		count     int
	)
	ok := scan(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		switch {
		case (num == fieldRequestHeaders || num == fieldResponseHeaders) && typ == protowire.BytesType:
			field, headers = num, v
		case num == fieldObservabilityMode && typ == protowire.VarintType:
			observe = x != 0
		case num == fieldMetadataContext && typ == protowire.BytesType && len(v) == 0:
			// Envoy sends it empty unless the filter forwards namespaces.
		case num == fieldProtocolConfig && typ == protowire.BytesType:
			pc = v
		default:
			return false
		}
		return true
	})
	if !ok || headers == nil || seen&(1<<fieldRequestHeaders) != 0 && seen&(1<<fieldResponseHeaders) != 0 {
		return false
	}
	seen0 := seen
	seen = 0
	ok = scan(headers, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		switch {
		case num == fieldHeaderMap && typ == protowire.BytesType:
			headerMap = v
		case num == fieldEndOfStream && typ == protowire.VarintType:
			eos = x != 0
		default:
			return false
		}
		return true
	})
	if !ok {
		return false
	}
	// First pass: check every header, count them and their bytes.
	var strSize, rawSize int
	ok = scan(headerMap, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if num != fieldHeaderValue || typ != protowire.BytesType {
			return false
		}
		count++
		var hs uint8
		return scan(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
			if num < fieldKey || num > fieldRawValue || typ != protowire.BytesType || hs&(1<<num) != 0 {
				return false
			}
			hs |= 1 << num
			if num == fieldRawValue {
				rawSize += len(v)
				return true
			}
			strSize += len(v)
			return utf8.Valid(v)
		})
	})
	if !ok {
		return false
	}
	var config *extprocv3.ProtocolConfiguration
	if pc != nil {
		config = new(extprocv3.ProtocolConfiguration)
		if proto.Unmarshal(pc, config) != nil {
			return false
		}
	}

	// Keys and values share one string, raw values one slice (copies: b
	// is gRPC's buffer), headers and their pointers one slice each.
	var sb strings.Builder
	sb.Grow(strSize)
	raw := make([]byte, 0, rawSize)
	values := make([]corev3.HeaderValue, count)
	ptrs := make([]*corev3.HeaderValue, count)
	i := 0
	scan(headerMap, func(_ protowire.Number, _ protowire.Type, v []byte, _ uint64) bool {
		scan(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) bool {
			if num == fieldRawValue {
				values[i].RawValue = raw[len(raw) : len(raw)+len(v) : len(raw)+len(v)]
				raw = append(raw, v...)
			} else {
				sb.Write(v)
			}
			return true
		})
		ptrs[i] = &values[i]
		i++
		return true
	})
	str, off := sb.String(), 0
	i = 0
	scan(headerMap, func(_ protowire.Number, _ protowire.Type, v []byte, _ uint64) bool {
		scan(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) bool {
			switch num {
			case fieldKey:
				values[i].Key = str[off : off+len(v)]
			case fieldValue:
				values[i].Value = str[off : off+len(v)]
			default:
				return true
			}
			off += len(v)
			return true
		})
		i++
		return true
	})

	proto.Reset(m)
	hr := new(headersRequest)
	hr.hm.Headers = ptrs
	hr.hh.Headers, hr.hh.EndOfStream = &hr.hm, eos
	if headerMap == nil {
		hr.hh.Headers = nil
	}
	if field == fieldRequestHeaders {
		hr.req.RequestHeaders = &hr.hh
		m.Request = &hr.req
	} else {
		hr.resp.ResponseHeaders = &hr.hh
		m.Request = &hr.resp
	}
	m.ObservabilityMode, m.ProtocolConfig = observe, config
	if seen0&(1<<fieldMetadataContext) != 0 {
		m.MetadataContext = &hr.md
	}
	return true
}

// scan calls f on each field of the protobuf message b (v: the bytes of a
// length-delimited field, x: a varint's value); false when b is malformed,
// has a field of another wire type, or f returns false.
func scan(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 15 {
			return false
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
			if v == nil && n >= 0 {
				v = b[:0] // present but empty
			}
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			return false
		}
		if n < 0 || !f(num, typ, v, x) {
			return false
		}
		b = b[n:]
	}
	return true
}
