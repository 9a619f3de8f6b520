package pipeline_test

import (
	"bytes"
	"encoding/json"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// MarshalResource writes "@type" itself instead of packing an Any; its
// output must be what protojson gives for the packed resource.
func TestMarshalResourceIsProtojsonOfTheAny(t *testing.T) {
	for _, m := range []proto.Message{
		&clusterv3.Cluster{},
		&clusterv3.Cluster{Name: "a \"quoted\" <name>", ConnectTimeout: durationpb.New(1500000000)},
		&routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{{Name: "v", Domains: []string{"*"}}}},
	} {
		got, err := pipeline.MarshalResource(m)
		if err != nil {
			t.Fatal(err)
		}
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := protojson.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("got  %s\nwant %s", got, want.Bytes())
		}
	}
}
