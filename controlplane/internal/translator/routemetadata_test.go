package translator

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRouteMetadata(t *testing.T) {
	for _, tc := range []struct {
		name   string
		origin *ir.RouteOrigin
		want   string
	}{
		{"no origin: no metadata", nil, ""},
		{"a named rule: its sectionName",
			&ir.RouteOrigin{Kind: "HTTPRoute", Namespace: "default", Name: "app", SectionName: "named"},
			`{"filterMetadata":{"envoy-gateway":{"resources":[{"kind":"HTTPRoute","name":"app","namespace":"default","sectionName":"named"}]}}}`},
		{"an HTTPProxy route: no sectionName",
			&ir.RouteOrigin{Kind: "HTTPProxy", Namespace: "default", Name: "root"},
			`{"filterMetadata":{"envoy-gateway":{"resources":[{"kind":"HTTPProxy","name":"root","namespace":"default"}]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := routeMetadata(tc.origin)
			if tc.want == "" {
				if md != nil {
					t.Fatalf("got %v, want none", md)
				}
				return
			}
			want := &corev3.Metadata{}
			if err := protojson.Unmarshal([]byte(tc.want), want); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(md, want) {
				t.Errorf("got %v\nwant %v", md, want)
			}
		})
	}
}
