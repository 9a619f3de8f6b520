package xdsserver

import (
	"slices"
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// TestCodecKeepsNamesEncoded: a state-of-the-world request decoded by the
// codec has every field the standard decoding has, its names' fingerprint,
// and the names themselves on demand; other messages decode as usual.
func TestCodecKeepsNamesEncoded(t *testing.T) {
	names := []string{"https/a.example.com", "ingress_http", "https/b.example.com"}
	in := &discoveryv3.DiscoveryRequest{VersionInfo: "7", Node: &corev3.Node{Id: "envoy-1"}, ResourceNames: names,
		TypeUrl: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", ResponseNonce: "12", ErrorDetail: &status.Status{Message: "bad"}}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	c := newCodec()
	var got sotwRequest
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got); err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(in).(*discoveryv3.DiscoveryRequest)
	want.ResourceNames = nil
	if !proto.Equal(&got.DiscoveryRequest, want) {
		t.Errorf("decoded %v, want %v", &got.DiscoveryRequest, want)
	}
	if got.key != fingerprintOf(names) {
		t.Errorf("fingerprint %+v, want %+v (that of the names as strings)", got.key, fingerprintOf(names))
	}
	if decoded, err := got.resourceNames(); err != nil || !slices.Equal(decoded, names) {
		t.Errorf("names %v (%v), want %v", decoded, err, names)
	}
	reordered := &sotwRequest{}
	b2, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{names[2], names[0], names[1]}})
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b2)}, reordered); err != nil || reordered.key != got.key {
		t.Errorf("the same names in another order: fingerprint %+v (%v), want %+v", reordered.key, err, got.key)
	}

	bad := &sotwRequest{}
	b3 := []byte{resourceNamesField<<3 | 2, 2, 0xff, 0xfe}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b3)}, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.resourceNames(); err == nil {
		t.Error("a name that is not UTF-8 was accepted")
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff})}, &sotwRequest{}); err == nil {
		t.Error("a truncated message was accepted")
	}

	var delta discoveryv3.DeltaDiscoveryRequest
	b4, _ := proto.Marshal(&discoveryv3.DeltaDiscoveryRequest{ResourceNamesSubscribe: names})
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b4)}, &delta); err != nil || !slices.Equal(delta.ResourceNamesSubscribe, names) {
		t.Errorf("a delta request decoded %v (%v)", delta.ResourceNamesSubscribe, err)
	}
}

// BenchmarkDecodeACK decodes a state-of-the-world ACK naming 10,001 route
// configurations (an Envoy at 10,000 TLS hosts), with the standard codec
// and with codec.
func BenchmarkDecodeACK(b *testing.B) {
	req := &discoveryv3.DiscoveryRequest{TypeUrl: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", VersionInfo: "42", ResponseNonce: "17"}
	for i := range 10000 {
		req.ResourceNames = append(req.ResourceNames, "https/host-"+strconv.Itoa(i)+".bench.example.com")
	}
	req.ResourceNames = append(req.ResourceNames, "ingress_http")
	data, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	c := newCodec()
	b.Run("standard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r discoveryv3.DiscoveryRequest
			if err := c.std.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r sotwRequest
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &r); err != nil {
				b.Fatal(err)
			}
			r.release()
		}
	})
}
