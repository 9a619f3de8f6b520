package xdsserver

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"unicode/utf8"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

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
	// known are the runs of names of the stream's earlier requests.
	known *nameRuns
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
	if c, ok := v.(*composed); ok {
		return c.marshal(), nil
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
	rest, err := r.readNames(r.known)
	if errors.Is(err, errNamesSplit) {
		rest, err = r.readNames(nil)
	}
	if err != nil {
		return err
	}
	return proto.Unmarshal(rest, &r.DiscoveryRequest)
}

// errNamesSplit: a request's names are not all in one run of fields, so a
// run told known does not hold them all.
var errNamesSplit = errors.New("resource names in more than one run")

// readNames sets r.key from r.raw's names, using the runs of names known
// (nil: none), and returns the encoding of the request's other fields.
func (r *sotwRequest) readNames(known *nameRuns) ([]byte, error) {
	r.key = fingerprint{}
	rest := make([]byte, 0, 256)
	start, end := -1, -1 // the first run of names
	matched := false     // it is a known one
	one := true          // the names are all in it
	for off := 0; off < len(r.raw); {
		b := r.raw[off:]
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if num != resourceNamesField || typ != protowire.BytesType {
			rest = append(rest, b[:n+m]...)
			off += n + m
			continue
		}
		switch {
		case start < 0:
			start = off
			if l, key, ok := known.match(b); ok {
				r.key, matched = key, true
				off, end = off+l, off+l
				continue
			}
		case matched:
			return nil, errNamesSplit
		case off != end:
			one = false
		}
		v, _ := protowire.ConsumeBytes(b[n:])
		r.key.addBytes(v)
		off += n + m
		end = off
	}
	if start >= 0 && one && !matched {
		known.remember(r.raw[start:end], r.key)
	}
	return rest, nil
}

// nameRuns are the last runs of encoded names a stream's requests carried
// (of any type: in practice one per type with names). An Envoy repeats
// its names, in the same order, on every ACK (10,001 route configurations
// at 10,000 TLS hosts): one hash of their bytes then tells them
// unchanged, instead of a hash per name, which was a tenth of the control
// plane's CPU when a change reached 1,000 Envoys.
type nameRuns struct {
	runs [4]nameRun // one per type with names (endpoints, routes, secrets)
	next int
}

type nameRun struct {
	len  int
	head string // its first bytes, to pass over another type's run without hashing it
	hash uint64
	key  fingerprint
}

// runHead is how many first bytes of a run are kept to compare.
const runHead = 64

// match tells whether b begins with a known run of names, and nothing but
// it (the field after it is not a name): its length and fingerprint.
func (k *nameRuns) match(b []byte) (int, fingerprint, bool) {
	if k == nil {
		return 0, fingerprint{}, false
	}
	for _, run := range k.runs {
		if run.len == 0 || run.len > len(b) || !bytes.HasPrefix(b, []byte(run.head)) {
			continue
		}
		if run.len < len(b) {
			if num, _, n := protowire.ConsumeTag(b[run.len:]); n < 0 || num == resourceNamesField {
				continue
			}
		}
		if maphash.Bytes(nameSeed, b[:run.len]) == run.hash {
			return run.len, run.key, true
		}
	}
	return 0, fingerprint{}, false
}

// remember adds the run of names b, of fingerprint key, to those known.
func (k *nameRuns) remember(b []byte, key fingerprint) {
	if k == nil {
		return
	}
	k.runs[k.next] = nameRun{len: len(b), head: string(b[:min(len(b), runHead)]), hash: maphash.Bytes(nameSeed, b), key: key}
	k.next = (k.next + 1) % len(k.runs)
}

// composed is a response of some of a table's resources: every response
// but one of all of them (preEncoded) and one whose encoding is made by
// the standard codec. It is written from the resources' own encodings
// (resource.sotwHead or deltaHead, and value), shared by every stream and
// never copied: a stream that does not read what it is sent holds a few
// bytes per resource, not a copy of them (a 1 MB route configuration for
// each of 100 such streams, and with the slots once shared by the large
// responses, a fleet waiting on them; see adsStream).
type composed struct {
	// head is the encoding of the response's other fields: type URL,
	// version, removed names.
	head  []byte
	rs    []*resource
	delta bool
	nonce string
}

func (c *composed) marshal() mem.BufferSlice {
	out := make(mem.BufferSlice, 0, 2+2*len(c.rs))
	out = append(out, mem.SliceBuffer(c.head))
	for _, r := range c.rs {
		if c.delta {
			out = append(out, r.deltaHead, r.value)
		} else {
			out = append(out, r.sotwHead, r.value)
		}
	}
	nonce := protowire.AppendString(protowire.AppendTag(nil, nonceField, protowire.BytesType), c.nonce)
	return append(out, mem.SliceBuffer(nonce))
}

// Field numbers of DiscoveryResponse and DeltaDiscoveryResponse (both
// have version 1, resources 2 and type URL 4), of the delta response's
// removed_resources, of Resource and of Any.
const (
	versionField, resourcesField, typeURLField, removedField       = 1, 2, 4, 6
	resourceVersionField, resourceResourceField, resourceNameField = 1, 2, 3
	anyTypeURLField, anyValueField                                 = 1, 2
)

// responseHead encodes a response's type URL, version and removed names.
func responseHead(typeURL, version string, removed []string) []byte {
	b := protowire.AppendString(protowire.AppendTag(nil, versionField, protowire.BytesType), version)
	b = protowire.AppendString(protowire.AppendTag(b, typeURLField, protowire.BytesType), typeURL)
	for _, n := range removed {
		b = protowire.AppendString(protowire.AppendTag(b, removedField, protowire.BytesType), n)
	}
	return b
}

// resourceHeads encodes a resource as a response's resources field up to
// its message's bytes (any.Value): as a state-of-the-world response
// carries it (an Any) and as a delta one does (a Resource).
func resourceHeads(name, version string, a *anypb.Any) (sotw, delta []byte) {
	var inner []byte // the Any up to its value
	inner = protowire.AppendString(protowire.AppendTag(inner, anyTypeURLField, protowire.BytesType), a.TypeUrl)
	inner = protowire.AppendVarint(protowire.AppendTag(inner, anyValueField, protowire.BytesType), uint64(len(a.Value)))
	anyLen := uint64(len(inner)) + uint64(len(a.Value))

	sotw = protowire.AppendVarint(protowire.AppendTag(nil, resourcesField, protowire.BytesType), anyLen)
	sotw = append(sotw, inner...)

	var fields []byte // the Resource up to its Any
	fields = protowire.AppendString(protowire.AppendTag(fields, resourceVersionField, protowire.BytesType), version)
	fields = protowire.AppendString(protowire.AppendTag(fields, resourceNameField, protowire.BytesType), name)
	fields = protowire.AppendVarint(protowire.AppendTag(fields, resourceResourceField, protowire.BytesType), anyLen)
	delta = protowire.AppendVarint(protowire.AppendTag(nil, resourcesField, protowire.BytesType), uint64(len(fields))+anyLen)
	delta = append(append(delta, fields...), inner...)
	return sotw, delta
}
