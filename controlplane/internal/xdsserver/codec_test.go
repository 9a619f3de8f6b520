package xdsserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
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

// TestCodecKnownNames: a stream's requests repeating a run of names it
// sent before are told by one hash of the run; whatever changes, the
// fingerprint is still that of all the names.
func TestCodecKnownNames(t *testing.T) {
	names := []string{"https/a.example.com", "https/b.example.com", "ingress_http"}
	route := "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	encode := func(r *discoveryv3.DiscoveryRequest) []byte {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := encode(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "envoy-1"}, ResourceNames: names, TypeUrl: route})
	names2 := []string{"https/a.example.com", "https/c.example.com", "ingress_http"} // same length
	extra := encode(&discoveryv3.DiscoveryRequest{ResourceNames: append(slices.Clone(names), "https/d.example.com"), TypeUrl: route})
	// The known run, then another field, then one more name.
	split := append(encode(&discoveryv3.DiscoveryRequest{ResourceNames: names, TypeUrl: route}),
		encode(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"https/d.example.com"}})...)
	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{
		{"the same names after other fields (an ACK without the node)", encode(&discoveryv3.DiscoveryRequest{VersionInfo: "2", ResourceNames: names, TypeUrl: route, ResponseNonce: "3"}), names},
		{"another name of the same length", encode(&discoveryv3.DiscoveryRequest{ResourceNames: names2, TypeUrl: route}), names2},
		{"one name more", extra, append(slices.Clone(names), "https/d.example.com")},
		{"the known run and a name further on", split, append(slices.Clone(names), "https/d.example.com")},
		{"no names", encode(&discoveryv3.DiscoveryRequest{TypeUrl: route}), nil},
		{"the first names again", first, names},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := &nameRuns{}
			c := newCodec()
			for i, data := range [][]byte{first, tc.data} {
				r := &sotwRequest{known: known}
				if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, r); err != nil {
					t.Fatal(err)
				}
				want := names
				if i == 1 {
					want = tc.want
				}
				if r.key != fingerprintOf(want) {
					t.Errorf("request %d: fingerprint %+v, want that of %v", i, r.key, want)
				}
				if got, _ := r.resourceNames(); !slices.Equal(got, want) && len(got)+len(want) > 0 {
					t.Errorf("request %d: names %v, want %v", i, got, want)
				}
				if r.TypeUrl != route {
					t.Errorf("request %d: type %q", i, r.TypeUrl)
				}
				r.release()
			}
		})
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
	// As a stream decodes its ACKs: the names are those of the last one.
	b.Run("codec-repeated", func(b *testing.B) {
		b.ReportAllocs()
		known := &nameRuns{}
		for b.Loop() {
			r := sotwRequest{known: known}
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &r); err != nil {
				b.Fatal(err)
			}
			r.release()
		}
	})
}

// TestCodecKnownRunIsTaken: a request repeating a known run is told by
// that run (its remembered fingerprint is the one returned), not read
// name by name; the correctness of every case is TestCodecKnownNames's.
func TestCodecKnownRunIsTaken(t *testing.T) {
	b, err := proto.Marshal(&discoveryv3.DiscoveryRequest{ResourceNames: []string{"https/a.example.com", "ingress_http"}, TypeUrl: "t"})
	if err != nil {
		t.Fatal(err)
	}
	known := &nameRuns{}
	c := newCodec()
	decode := func() fingerprint {
		r := &sotwRequest{known: known}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, r); err != nil {
			t.Fatal(err)
		}
		r.release()
		return r.key
	}
	decode()
	marker := fingerprint{n: 42}
	known.runs[0].key = marker // what only the known run can give
	if got := decode(); got != marker {
		t.Errorf("a repeated run was read name by name (fingerprint %+v), not told by its hash", got)
	}
}

// TestComposedIsTheResponse: a composed response decodes as the response
// the standard codec would have encoded, over both protocols.
func TestComposedIsTheResponse(t *testing.T) {
	var rs []*resource
	for i, domain := range []string{"a.example.com", strings.Repeat("b", 300) + ".example.com"} {
		a, err := anypb.New(&routev3.RouteConfiguration{Name: fmt.Sprint("r", i), VirtualHosts: []*routev3.VirtualHost{{Name: "v", Domains: []string{domain}}}})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, newResource(fmt.Sprint("r", i), fmt.Sprint("version-", i), a))
	}
	decode := func(c *composed, into proto.Message) {
		t.Helper()
		var b []byte
		for _, buf := range c.marshal() {
			b = append(b, buf.ReadOnlyData()...)
		}
		if err := proto.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	got := &discoveryv3.DiscoveryResponse{}
	decode(&composed{head: responseHead(resourcev3.RouteType, "7", nil), rs: rs, nonce: "3"}, got)
	want := &discoveryv3.DiscoveryResponse{TypeUrl: resourcev3.RouteType, VersionInfo: "7", Nonce: "3", Resources: []*anypb.Any{rs[0].any, rs[1].any}}
	if !proto.Equal(got, want) {
		t.Errorf("state of the world: got %v, want %v", got, want)
	}
	gotDelta := &discoveryv3.DeltaDiscoveryResponse{}
	decode(&composed{head: responseHead(resourcev3.RouteType, "7", []string{"gone", "also-gone"}), rs: rs, delta: true, nonce: "4"}, gotDelta)
	wantDelta := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resourcev3.RouteType, SystemVersionInfo: "7", Nonce: "4",
		Resources: []*discoveryv3.Resource{rs[0].delta, rs[1].delta}, RemovedResources: []string{"gone", "also-gone"}}
	if !proto.Equal(gotDelta, wantDelta) {
		t.Errorf("delta: got %v, want %v", gotDelta, wantDelta)
	}
}
