package translator

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// VirtualHostObjects blames the hosts an Envoy virtual host serves, by its
// exact name: not a host whose name is part of it, and every host merged
// into it.
func TestIndexVirtualHostObjects(t *testing.T) {
	ref := func(name string) ir.Origins {
		return ir.NewOrigins(objects.Ref{Kind: "HTTPRoute", Namespace: "default", Name: name})
	}
	route := func(path string) []*ir.Route {
		return []*ir.Route{{Path: path, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}
	}
	m := sharedModel([]*ir.VirtualHost{
		{FQDN: "example.com", Routes: route("/e"), Origins: ref("e")},
		{FQDN: "a.example.com", Routes: route("/a"), Origins: ref("a")},
		// Identical routes: served by a.example.com's virtual host.
		{FQDN: "b.example.com", Routes: route("/a"), Origins: ref("b")},
	}, nil)
	res := Translate(m, Options{})
	if n := len(routeConfigNamed(t, res.Routes, HTTPRouteConfigName).VirtualHosts); n != 2 {
		t.Fatalf("%d virtual hosts, want 2 (b.example.com merged into a.example.com)", n)
	}
	for _, tc := range []struct {
		vhost string
		want  ir.Origins
	}{
		{"a.example.com", ref("a").Union(ref("b"))},
		{"example.com", ref("e")},
		{"b.example.com", ref("a").Union(ref("b")).Union(ref("e"))}, // no such virtual host: all
	} {
		if got := res.Index.VirtualHostObjects(resourcev3.RouteType, HTTPRouteConfigName, tc.vhost); !slices.Equal(got, tc.want) {
			t.Errorf("virtual host %s: %v, want %v", tc.vhost, got, tc.want)
		}
	}
	if got := res.Index.VirtualHostObjects(resourcev3.RouteType, "unknown", "a.example.com"); got != nil {
		t.Errorf("unknown route configuration: %v, want none", got)
	}
}
