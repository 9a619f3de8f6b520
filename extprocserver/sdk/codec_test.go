package sdk

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func wireHeaders(response, eos bool, kv ...string) *extprocsvcv3.ProcessingRequest {
	hm := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	hh := &extprocsvcv3.HttpHeaders{Headers: hm, EndOfStream: eos}
	if response {
		return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: hh}}
	}
	return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{RequestHeaders: hh}}
}

// codecCases are wire messages: those the fast path decodes and those it
// must leave to protobuf (which decodes them, or fails).
func codecCases(t testing.TB) map[string][]byte {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	typical := wireHeaders(false, true, ":method", "GET", ":path", "/api/login?x=1", ":authority", "bench.example",
		"user-agent", "Go-http-client/1.1", "x-request-id", "0f0e0d0c", "x-forwarded-proto", "http", "cookie", "a=1", "cookie", "b=2")
	withConfig := proto.Clone(typical).(*extprocsvcv3.ProcessingRequest)
	withConfig.ProtocolConfig = &extprocsvcv3.ProtocolConfiguration{RequestBodyMode: extprocv3.ProcessingMode_BUFFERED, ResponseBodyMode: extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED}
	withConfig.ObservabilityMode = true
	withConfig.MetadataContext = &corev3.Metadata{} // as Envoy sends it
	valueField := wireHeaders(true, false)
	valueField.GetResponseHeaders().Headers.Headers = []*corev3.HeaderValue{{Key: ":status", Value: "200"}, {Key: "empty", RawValue: []byte{}}, {Key: "", Value: ""}}
	withAttrs := proto.Clone(typical).(*extprocsvcv3.ProcessingRequest)
	withAttrs.Attributes = map[string]*structpb.Struct{"envoy.filters.http.ext_proc": {Fields: map[string]*structpb.Value{"request.path": structpb.NewStringValue("/")}}}
	withMetadata := proto.Clone(typical).(*extprocsvcv3.ProcessingRequest)
	withMetadata.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": {}}}
	noMap := &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocsvcv3.HttpHeaders{EndOfStream: true}}}
	emptyMap := &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocsvcv3.HttpHeaders{Headers: &corev3.HeaderMap{}}}}
	body := &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestBody{RequestBody: &extprocsvcv3.HttpBody{Body: []byte("abc"), EndOfStream: true}}}
	trailers := func(response bool, kv ...string) *extprocsvcv3.ProcessingRequest {
		ht := &extprocsvcv3.HttpTrailers{Trailers: wireHeaders(false, false, kv...).GetRequestHeaders().GetHeaders()}
		if response {
			return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: ht}}
		}
		return &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_RequestTrailers{RequestTrailers: ht}}
	}
	noTrailerMap := &extprocsvcv3.ProcessingRequest{Request: &extprocsvcv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocsvcv3.HttpTrailers{}}}
	upper := wireHeaders(false, false, "X-Upper", "u", ":path", "/")
	tb := typical.GetRequestHeaders()

	cases := map[string][]byte{
		"typical request headers":  marshal(typical),
		"response headers":         marshal(wireHeaders(true, false, ":status", "200", "content-length", "12")),
		"protocol config":          marshal(withConfig),
		"value field and empties":  marshal(valueField),
		"attributes (fallback)":    marshal(withAttrs),
		"metadata (fallback)":      marshal(withMetadata),
		"no header map":            marshal(noMap),
		"empty header map":         marshal(emptyMap),
		"body (fallback)":          marshal(body),
		"request trailers":         marshal(trailers(false, "x-checksum", "abc")),
		"response trailers":        marshal(trailers(true, "grpc-status", "0", "grpc-message", "")),
		"trailers without a map":   marshal(noTrailerMap),
		"upper-case name":          marshal(upper),
		"empty message (fallback)": {},
		"truncated (fallback)":     marshal(typical)[:20],
		"invalid UTF-8 raw value":  marshal(wireHeaders(false, false, "x", "\xff\xfe")),
	}
	// Invalid UTF-8 in a key: proto.Marshal refuses to write it.
	bad := protowire.AppendTag(nil, 1, protowire.BytesType)
	bad = protowire.AppendString(bad, "x-\xff")
	bad = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bad)
	bad = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bad)
	cases["invalid UTF-8 key (error)"] = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bad)
	// Both headers fields: protobuf keeps the last oneof member.
	both := append(marshal(typical), marshal(wireHeaders(true, false, ":status", "204"))...)
	cases["request and response headers (fallback)"] = both
	// A field twice: protobuf merges, the fast path leaves it.
	cases["headers field twice (fallback)"] = append(marshal(typical), marshal(typical)...)
	// An unknown field inside HttpHeaders: kept as unknown by protobuf.
	hh, _ := proto.Marshal(tb)
	hh = protowire.AppendTag(hh, 9, protowire.VarintType)
	hh = protowire.AppendVarint(hh, 1)
	unknown := protowire.AppendTag(nil, 2, protowire.BytesType)
	cases["unknown field in HttpHeaders (fallback)"] = protowire.AppendBytes(unknown, hh)
	// end_of_stream is not a field of HttpTrailers: unknown to protobuf.
	ht, _ := proto.Marshal(trailers(false, "x", "1").GetRequestTrailers())
	ht = protowire.AppendVarint(protowire.AppendTag(ht, 3, protowire.VarintType), 1)
	cases["field 3 in HttpTrailers (fallback)"] = protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), ht)
	// A field of the header map repeated: protobuf keeps the last.
	hv := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "x-a")
	hv = protowire.AppendString(protowire.AppendTag(hv, 1, protowire.BytesType), "x-b")
	hmap := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hv)
	hmap = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hmap)
	cases["key twice (fallback)"] = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), hmap)
	// Protocol config with an enum outside the known values, and one with
	// an unknown field.
	pc := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1<<40+7)
	pc = protowire.AppendVarint(protowire.AppendTag(pc, 3, protowire.VarintType), 2)
	cases["protocol config, large enum"] = append(marshal(typical), protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), pc)...)
	pc = protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1)
	cases["protocol config, unknown field (fallback)"] = append(marshal(typical), protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), pc)...)
	// A non-empty metadata context, and a varint where a message belongs.
	cases["observability mode as bytes (fallback)"] = append(marshal(typical), protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), nil)...)
	// An overlong varint in a header: protobuf refuses it.
	over := protowire.AppendTag(nil, 2, protowire.BytesType)
	cases["overlong length (error)"] = append(over, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
	return cases
}

// TestCodecDecodesAsProtobuf: every message decodes to what proto.Unmarshal
// gives, or fails as it does.
func TestCodecDecodesAsProtobuf(t *testing.T) {
	for name, b := range codecCases(t) {
		t.Run(name, func(t *testing.T) { checkDecode(t, b) })
	}
}

// checkDecode decodes b with Codec into a ProcessingRequest (in full) and
// into the driver's request (header map left as bytes): both must give
// what protobuf gives, or fail as it does.
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	want := new(extprocsvcv3.ProcessingRequest)
	wantErr := proto.Unmarshal(b, want)
	got := new(extprocsvcv3.ProcessingRequest)
	err := Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), b...))}, got)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, protobuf's %v", err, wantErr)
	}
	if err == nil && !proto.Equal(got, want) {
		t.Fatalf("decoded\n%v\nprotobuf decodes\n%v", got, want)
	}

	lazy := new(request)
	// In two buffers, as gRPC may hold a message.
	half := len(b) / 2
	err = Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append([]byte(nil), b[:half]...)), mem.SliceBuffer(append([]byte(nil), b[half:]...))}, lazy)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("lazily: error %v, protobuf's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if !lazy.lazy {
		if !proto.Equal(&lazy.ProcessingRequest, want) {
			t.Fatalf("lazily, in full:\n%v\nprotobuf decodes\n%v", &lazy.ProcessingRequest, want)
		}
		return
	}
	// The header map as the driver reads it, then the rest of the message.
	var hm *corev3.HeaderMap
	switch r := want.GetRequest().(type) {
	case *extprocsvcv3.ProcessingRequest_RequestHeaders:
		hm, r.RequestHeaders.Headers = r.RequestHeaders.Headers, nil
	case *extprocsvcv3.ProcessingRequest_ResponseHeaders:
		hm, r.ResponseHeaders.Headers = r.ResponseHeaders.Headers, nil
	case *extprocsvcv3.ProcessingRequest_RequestTrailers:
		hm, r.RequestTrailers.Trailers = r.RequestTrailers.Trailers, nil
	case *extprocsvcv3.ProcessingRequest_ResponseTrailers:
		hm, r.ResponseTrailers.Trailers = r.ResponseTrailers.Trailers, nil
	default:
		t.Fatalf("lazily decoded a %T", r)
	}
	gotFields := newHeaders(new(Headers), lazy, nil, false).load()
	if wantFields := fieldsOf(hm.GetHeaders()); !slices.Equal(gotFields, wantFields) {
		t.Fatalf("lazily decoded headers %q, protobuf's %q", gotFields, wantFields)
	}
	if !proto.Equal(&lazy.ProcessingRequest, want) {
		t.Fatalf("lazily decoded\n%v\nprotobuf decodes (without the header map)\n%v", &lazy.ProcessingRequest, want)
	}
}

func TestCodecFastPathIsTaken(t *testing.T) {
	cases := codecCases(t)
	for _, name := range []string{"typical request headers", "response headers", "protocol config", "value field and empties", "no header map", "empty header map",
		"request trailers", "response trailers", "trailers without a map", "upper-case name", "protocol config, large enum"} {
		if !decodeHeadersRequest(cases[name], new(extprocsvcv3.ProcessingRequest)) {
			t.Errorf("%s: fast path not taken", name)
		}
		if r := new(request); !decodeLazy(cases[name], r) || !r.lazy {
			t.Errorf("%s: lazy path not taken", name)
		}
	}
	for name, b := range cases {
		if strings.Contains(name, "(fallback)") || strings.Contains(name, "(error)") {
			if decodeLazy(b, new(request)) {
				t.Errorf("%s: lazy path taken", name)
			}
		}
	}
}

// The decoded message must not share memory with the gRPC buffer, which is
// reused once Unmarshal returns.
func TestCodecCopiesTheBuffer(t *testing.T) {
	b, _ := proto.Marshal(wireHeaders(false, true, "x-a", "value-a"))
	got := new(extprocsvcv3.ProcessingRequest)
	if err := Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'z'
	}
	hv := got.GetRequestHeaders().GetHeaders().GetHeaders()[0]
	if hv.GetKey() != "x-a" || string(hv.GetRawValue()) != "value-a" {
		t.Fatalf("decoded header changed with the buffer: %q %q", hv.GetKey(), hv.GetRawValue())
	}
}

func TestCodecContinueResponses(t *testing.T) {
	for p, r := range continueResponses {
		if r == nil {
			continue
		}
		data, err := Codec.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := new(extprocsvcv3.ProcessingResponse)
		if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, r) {
			t.Errorf("%s: %v %v", Phase(p), got, err)
		}
	}
	// Any other response is encoded as usual.
	r := &extprocsvcv3.ProcessingResponse{Response: &extprocsvcv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvcv3.HeadersResponse{
		Response: &extprocsvcv3.CommonResponse{ClearRouteCache: true}}}}
	data, err := Codec.Marshal(r)
	got := new(extprocsvcv3.ProcessingResponse)
	if err != nil || proto.Unmarshal(data.Materialize(), got) != nil || !proto.Equal(got, r) {
		t.Errorf("clear_route_cache response: %v %v", got, err)
	}
}

func FuzzCodecDecodesAsProtobuf(f *testing.F) {
	for _, b := range codecCases(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}

func BenchmarkDecodeHeaders(b *testing.B) {
	kv := []string{":method", "GET", ":path", "/api/login", ":authority", "bench.example", ":scheme", "http",
		"user-agent", "Go-http-client/1.1", "x-request-id", "0f0e0d0c-0b0a-0908-0706-050403020100", "x-forwarded-proto", "http", "accept-encoding", "gzip"}
	data, _ := proto.Marshal(wireHeaders(false, true, kv...))
	for _, c := range []struct {
		name  string
		codec interface {
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"protobuf", protoCodec}, {"sdk", Codec}} {
		b.Run(fmt.Sprintf("%s/%d headers", c.name, len(kv)/2), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, new(extprocsvcv3.ProcessingRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// What the driver does: the map kept as bytes, then (read) decoded
	// when a processor first reads a header.
	for _, read := range []bool{false, true} {
		b.Run(fmt.Sprintf("sdk lazy, read %v/%d headers", read, len(kv)/2), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := new(request)
				if err := Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, r); err != nil {
					b.Fatal(err)
				}
				if read && newHeaders(new(Headers), r, nil, false).Get(":path") != "/api/login" {
					b.Fatal("no :path")
				}
			}
		})
	}
}

// The shared CONTINUE responses are also sent by servers without Codec,
// where gRPC's protobuf codec marshals them from many streams at once.
func TestContinueResponsesSharedWithoutCodec(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer() // the standard codec
	extprocsvcv3.RegisterExternalProcessorServer(srv, NewServer(Continue{}))
	go func() { _ = srv.Serve(lis) }() // returns when stopped
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := extprocsvcv3.NewExternalProcessorClient(conn)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				s, err := c.Process(t.Context())
				if err != nil {
					t.Error(err)
					return
				}
				for _, req := range []*extprocsvcv3.ProcessingRequest{wireHeaders(false, false, ":path", "/"), wireHeaders(true, true, ":status", "200")} {
					if err := s.Send(req); err != nil {
						t.Error(err)
						return
					}
					resp, err := s.Recv()
					if err != nil {
						t.Error(err)
						return
					}
					if resp.GetRequestHeaders() == nil && resp.GetResponseHeaders() == nil || resp.GetDynamicMetadata() != nil {
						t.Errorf("answer %v", resp)
					}
				}
				if err := s.CloseSend(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestCodecEncodesHeadersAnswersAsProtobuf: Codec's hand-written encoding
// of the driver's headers answers gives protobuf's bytes; answers it does
// not handle are marshalled by protobuf.
func TestCodecEncodesHeadersAnswersAsProtobuf(t *testing.T) {
	set := func(k, v string, a corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
		return headerOption(k, v, a)
	}
	overwrite, appendAction := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	long := strings.Repeat("v", 300) // two-byte lengths
	for _, tc := range []struct {
		name     string
		phase    Phase
		mut      *extprocsvcv3.HeaderMutation
		clear    bool
		edit     func(r *headersResponse)
		fallback bool
	}{
		{name: "one overwrite", phase: RequestHeaders, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{set("x-route", "GET /api/login", overwrite)}}},
		{name: "response: set, append, remove", phase: ResponseHeaders, mut: &extprocsvcv3.HeaderMutation{
			SetHeaders:    []*corev3.HeaderValueOption{set("x-a", "1", overwrite), set("x-a", "2", appendAction), set("x-long", long, overwrite)},
			RemoveHeaders: []string{"server", "x-powered-by"}}},
		{name: "empty value", phase: RequestHeaders, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{set("x-empty", "", overwrite)}}},
		{name: "value field", phase: RequestHeaders, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-v", Value: "text"}, AppendAction: corev3.HeaderValueOption_ADD_IF_ABSENT}}}},
		{name: "remove only", phase: ResponseHeaders, mut: &extprocsvcv3.HeaderMutation{RemoveHeaders: []string{"x-secret"}}},
		{name: "empty mutation", phase: RequestHeaders, mut: &extprocsvcv3.HeaderMutation{}},
		{name: "clear route cache only", phase: RequestHeaders, clear: true},
		{name: "clear route cache and mutation", phase: RequestHeaders, clear: true, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{set(":path", "/v2", overwrite)}}},
		{name: "dynamic metadata (protobuf)", phase: RequestHeaders, fallback: true, edit: func(r *headersResponse) {
			r.DynamicMetadata, _ = structpb.NewStruct(map[string]any{"ns": map[string]any{"k": "v"}})
		}},
		{name: "mode override (protobuf)", phase: RequestHeaders, fallback: true, edit: func(r *headersResponse) {
			r.ModeOverride = &extprocv3.ProcessingMode{ResponseBodyMode: extprocv3.ProcessingMode_BUFFERED}
		}},
		{name: "deprecated append (protobuf)", phase: RequestHeaders, fallback: true, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x", RawValue: []byte("1")}, Append: wrapperspb.Bool(true)}}}},
		{name: "keep empty value (protobuf)", phase: RequestHeaders, fallback: true, mut: &extprocsvcv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x"}, KeepEmptyValue: true}}}},
		{name: "status (protobuf)", phase: ResponseHeaders, fallback: true, edit: func(r *headersResponse) {
			r.common.Status = extprocsvcv3.CommonResponse_CONTINUE_AND_REPLACE
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := new(headersResponse)
			r.common.HeaderMutation, r.common.ClearRouteCache = tc.mut, tc.clear
			r.hr.Response = &r.common
			if tc.phase == RequestHeaders {
				r.req.RequestHeaders, r.Response = &r.hr, &r.req
			} else {
				r.res.ResponseHeaders, r.Response = &r.hr, &r.res
			}
			if tc.edit != nil {
				tc.edit(r)
			}
			if _, ok := r.encode(); ok == tc.fallback {
				t.Fatalf("encoded by hand: %v, want %v", ok, !tc.fallback)
			}
			data, err := Codec.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := proto.Marshal(&r.ProcessingResponse)
			if err != nil {
				t.Fatal(err)
			}
			got := data.Materialize()
			if string(got) != string(want) {
				t.Errorf("bytes\n%x\nprotobuf's\n%x", got, want)
			}
			decoded := new(extprocsvcv3.ProcessingResponse)
			if err := proto.Unmarshal(got, decoded); err != nil || !proto.Equal(decoded, &r.ProcessingResponse) {
				t.Errorf("decodes to %v (%v), want %v", decoded, err, &r.ProcessingResponse)
			}
			// The standard codec marshals the embedded answer.
			std, err := protoCodec.Marshal(r)
			if err != nil || string(std.Materialize()) != string(want) {
				t.Errorf("standard codec: %x (%v), want %x", std.Materialize(), err, want)
			}
		})
	}
}

// fieldVariants calls f once per field of every message reached from m
// (set message fields, and the first element of message lists), with a
// copy of m (made by clone) in which that field is set to a value other
// than its default. The fields come from the descriptors: a field added
// to the API is covered without changing the test.
func fieldVariants(t *testing.T, clone func() protoreflect.Message, f func(name string, m protoreflect.Message)) {
	t.Helper()
	var walk func(path []protoreflect.FieldDescriptor, md protoreflect.Message)
	walk = func(path []protoreflect.FieldDescriptor, sample protoreflect.Message) {
		fields := sample.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			name := string(sample.Descriptor().FullName()) + "." + string(fd.Name())
			m := clone()
			at := m
			for _, p := range path {
				at = child(at, p)
			}
			setNonDefault(at, fd)
			f(name, m)
			if fd.Message() != nil && !fd.IsMap() && sample.Has(fd) {
				walk(append(slices.Clip(path), fd), child(sample, fd))
			}
		}
	}
	walk(nil, clone())
}

// child is the message of field fd of m: the first element of a list.
func child(m protoreflect.Message, fd protoreflect.FieldDescriptor) protoreflect.Message {
	if fd.IsList() {
		return m.Mutable(fd).List().Get(0).Message()
	}
	return m.Mutable(fd).Message()
}

// setNonDefault sets fd of m to a value protobuf encodes: an element more
// in a list, an entry in a map, a present message, a scalar other than
// its default.
func setNonDefault(m protoreflect.Message, fd protoreflect.FieldDescriptor) {
	scalar := func(fd protoreflect.FieldDescriptor) protoreflect.Value {
		switch fd.Kind() {
		case protoreflect.BoolKind:
			return protoreflect.ValueOfBool(true)
		case protoreflect.EnumKind:
			return protoreflect.ValueOfEnum(1)
		case protoreflect.StringKind:
			return protoreflect.ValueOfString("x-variant")
		case protoreflect.BytesKind:
			return protoreflect.ValueOfBytes([]byte("variant"))
		case protoreflect.FloatKind:
			return protoreflect.ValueOfFloat32(1.5)
		case protoreflect.DoubleKind:
			return protoreflect.ValueOfFloat64(1.5)
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			return protoreflect.ValueOfInt32(7)
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return protoreflect.ValueOfInt64(7)
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			return protoreflect.ValueOfUint32(7)
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return protoreflect.ValueOfUint64(7)
		}
		panic(fmt.Sprintf("kind %v", fd.Kind()))
	}
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		v := mp.NewValue()
		if fd.MapValue().Message() == nil {
			v = scalar(fd.MapValue())
		}
		mp.Set(scalar(fd.MapKey()).MapKey(), v)
	case fd.IsList():
		l := m.Mutable(fd).List()
		if fd.Message() != nil {
			l.Append(l.NewElement())
		} else {
			l.Append(scalar(fd))
		}
	case fd.Message() != nil:
		if !m.Has(fd) {
			m.Set(fd, m.NewField(fd))
		}
	default:
		m.Set(fd, scalar(fd))
	}
}

// TestCodecEncodesEveryAnswerField: with any field of the driver's headers
// answer set, at any depth, Codec writes what proto.Marshal writes (by
// hand, or by falling back to protobuf): no field is dropped.
func TestCodecEncodesEveryAnswerField(t *testing.T) {
	for _, p := range []Phase{RequestHeaders, ResponseHeaders} {
		var r *headersResponse
		clone := func() protoreflect.Message {
			r = new(headersResponse)
			r.common.HeaderMutation = &extprocsvcv3.HeaderMutation{
				SetHeaders:    []*corev3.HeaderValueOption{headerOption("x-a", "1", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD)},
				RemoveHeaders: []string{"x-b"},
			}
			r.common.ClearRouteCache = p == RequestHeaders
			r.hr.Response = &r.common
			if p == RequestHeaders {
				r.req.RequestHeaders, r.Response = &r.hr, &r.req
			} else {
				r.res.ResponseHeaders, r.Response = &r.hr, &r.res
			}
			return r.ProtoReflect()
		}
		var seen []string
		fieldVariants(t, clone, func(name string, _ protoreflect.Message) {
			seen = append(seen, name)
			want, err := proto.Marshal(&r.ProcessingResponse)
			if err != nil {
				t.Fatal(err)
			}
			data, err := Codec.Marshal(r)
			if err != nil {
				t.Fatalf("%s, %s: %v", p, name, err)
			}
			if got := data.Materialize(); string(got) != string(want) {
				t.Errorf("%s, %s set: bytes\n%x\nprotobuf's\n%x", p, name, got, want)
			}
		})
		if !slices.Contains(seen, "envoy.config.core.v3.HeaderValue.raw_value") || !slices.Contains(seen, "envoy.service.ext_proc.v3.ProcessingResponse.override_message_timeout") {
			t.Fatalf("%s: the walk missed fields: %q", p, seen)
		}
	}
}

// TestCodecDecodesEveryRequestField: with any field of a headers or
// trailers message set, at any depth, Codec decodes what protobuf decodes,
// in full and lazily: a field the fast path does not know sends the
// message to protobuf, none is skipped.
func TestCodecDecodesEveryRequestField(t *testing.T) {
	withAll := wireHeaders(false, true, ":path", "/", "x-a", "1")
	withAll.ProtocolConfig = &extprocsvcv3.ProtocolConfiguration{RequestBodyMode: extprocv3.ProcessingMode_BUFFERED}
	withAll.MetadataContext = &corev3.Metadata{}
	withAll.ObservabilityMode = true
	trailers := &extprocsvcv3.HttpTrailers{Trailers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "grpc-status", RawValue: []byte("0")}}}}
	for _, root := range []*extprocsvcv3.ProcessingRequest{
		withAll,
		wireHeaders(true, false, ":status", "200"),
		{Request: &extprocsvcv3.ProcessingRequest_RequestTrailers{RequestTrailers: trailers}},
		{Request: &extprocsvcv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: trailers}},
	} {
		var seen []string
		clone := func() protoreflect.Message { return proto.Clone(root).ProtoReflect() }
		fieldVariants(t, clone, func(name string, m protoreflect.Message) {
			seen = append(seen, name)
			b, err := proto.Marshal(m.Interface())
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%T %s", root.GetRequest(), name), func(t *testing.T) { checkDecode(t, b) })
		})
		if !slices.Contains(seen, "envoy.config.core.v3.HeaderValue.value") {
			t.Fatalf("the walk missed fields: %q", seen)
		}
	}
}

// enumValue decodes an enum as protobuf does: int32 of the varint.
func TestEnumValue(t *testing.T) {
	for _, x := range []uint64{0, 1, 7, math.MaxInt32, math.MaxInt32 + 1, math.MaxUint32, 1<<40 + 7,
		0xffffffffffffffff, 0xffffffff80000000, 0x123456789abcdef0} {
		if got, want := enumValue(x), BodyMode(int32(x)); got != want {
			t.Errorf("enumValue(%#x) = %d, want %d", x, got, want)
		}
	}
}
