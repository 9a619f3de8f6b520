package controlplane

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		want, have, added, removed []string
	}{
		{nil, nil, nil, nil},
		{[]string{"a", "b"}, nil, []string{"a", "b"}, nil},
		{nil, []string{"a"}, nil, []string{"a"}},
		{[]string{"a", "c", "d"}, []string{"b", "c", "e"}, []string{"a", "d"}, []string{"b", "e"}},
	}
	for _, tt := range tests {
		added, removed := diff(tt.want, tt.have)
		if !slices.Equal(added, tt.added) || !slices.Equal(removed, tt.removed) {
			t.Errorf("diff(%v, %v) = %v, %v; want %v, %v", tt.want, tt.have, added, removed, tt.added, tt.removed)
		}
	}
}

// TestNamesCodec: a request encoded with its names encoded once decodes as
// the request, and a new list of names is encoded anew.
func TestNamesCodec(t *testing.T) {
	c := &namesCodec{std: encoding.GetCodecV2(protoenc.Name)}
	names := []string{"https/a.example.com", "https/b.example.com"}
	for i, r := range []*discoveryv3.DiscoveryRequest{
		{Node: &corev3.Node{Id: "envoy-1"}, TypeUrl: typeRoute, ResourceNames: names},
		{TypeUrl: typeRoute, VersionInfo: "2", ResponseNonce: "3", ResourceNames: names},
		{TypeUrl: typeRoute, VersionInfo: "3", ResponseNonce: "4", ResourceNames: []string{"https/c.example.com"}},
		{TypeUrl: typeCluster, VersionInfo: "1", ResponseNonce: "5"},
	} {
		b, err := c.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got discoveryv3.DiscoveryRequest
		if err := proto.Unmarshal(b.Materialize(), &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, r) {
			t.Errorf("request %d: decoded %v, want %v", i, &got, r)
		}
	}
}
