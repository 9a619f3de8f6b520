package xdsserver

import (
	"fmt"
	"sync"
	"unicode/utf8"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	// The standard codec, which this one hands every other message to.
	_ "google.golang.org/grpc/encoding/proto"
)

// A state-of-the-world request repeats every name the Envoy subscribes to
// on every ACK: 10,001 route configurations at 10,000 TLS hosts. Decoding
// them into strings was half of the control plane's CPU when a change
// reached 1,000 Envoys (and most of its garbage), to learn, nearly always,
// that they had not changed. codec reads them as a fingerprint only; the
// names are decoded when the fingerprint differs from the stream's.

// sotwRequest is a state-of-the-world request whose resource names are
// kept encoded.
type sotwRequest struct {
	// DiscoveryRequest has every field but ResourceNames.
	discoveryv3.DiscoveryRequest
	// key is the fingerprint of the resource names.
	key fingerprint
	// raw is the encoded request, to read the names from, in a buffer of
	// rawBuffers until release.
	raw    []byte
	pooled *[]byte
}

// rawBuffers holds the buffers of requests' encodings: one per ACK of
// 350 KB at 10,000 TLS hosts, which made the garbage collector run over
// the control plane's whole heap every few hundred ACKs.
var rawBuffers = sync.Pool{New: func() any { return new([]byte) }}

// release gives the request's encoding back, once its names are read.
func (r *sotwRequest) release() {
	if r.pooled != nil {
		*r.pooled = r.raw[:0]
		rawBuffers.Put(r.pooled)
		r.raw, r.pooled = nil, nil
	}
}

// resourceNames decodes the request's resource names.
func (r *sotwRequest) resourceNames() ([]string, error) {
	names := make([]string, 0, r.key.n)
	for b := r.raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if num == resourceNamesField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			if !utf8.Valid(v) {
				return nil, fmt.Errorf("resource name %q is not UTF-8", v)
			}
			names = append(names, string(v))
		}
		b = b[n+m:]
	}
	return names, nil
}

// resourceNamesField is DiscoveryRequest.resource_names's field number.
const resourceNamesField = 3

// codec is gRPC's protobuf codec but for sotwRequest.
type codec struct{ std encoding.CodecV2 }

func newCodec() codec { return codec{std: encoding.GetCodecV2("proto")} }

func (c codec) Name() string { return "proto" }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if p, ok := v.(*preEncoded); ok {
		nonce := protowire.AppendString(protowire.AppendTag(nil, nonceField, protowire.BytesType), p.nonce)
		return mem.BufferSlice{mem.SliceBuffer(p.shared), mem.SliceBuffer(nonce)}, nil
	}
	return c.std.Marshal(v)
}

// preEncoded is a response encoded once for many Envoys (a table's
// encodeAll) and the nonce of one: an encoding is a sequence of fields, so
// the nonce's is appended to it, and gRPC writes both without copying.
// A first configuration at 10,000 TLS hosts is 15 MB: encoded for each
// Envoy, gRPC held a copy for each one syncing.
type preEncoded struct {
	shared []byte
	nonce  string
}

// nonceField is the field number of the nonce of both DiscoveryResponse
// and DeltaDiscoveryResponse.
const nonceField = 5

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*sotwRequest)
	if !ok {
		return c.std.Unmarshal(data, v)
	}
	r.pooled = rawBuffers.Get().(*[]byte)
	r.raw = (*r.pooled)[:0]
	for _, buf := range data {
		r.raw = append(r.raw, buf.ReadOnlyData()...)
	}
	rest := make([]byte, 0, 256)
	for b := r.raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if num == resourceNamesField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			r.key.addBytes(v)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return proto.Unmarshal(rest, &r.DiscoveryRequest)
}
