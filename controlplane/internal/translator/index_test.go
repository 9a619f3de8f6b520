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

// Clusters and their endpoints are found by name whatever the order of the
// model's clusters; a cluster without a ClusterLoadAssignment (DNS) has no
// endpoints entry.
func TestIndexClusters(t *testing.T) {
	ref := func(name string) ir.Origins {
		return ir.NewOrigins(objects.Ref{Kind: "HTTPProxy", Namespace: "default", Name: name})
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
		all := []*ir.Cluster{
			{Name: "a/svc/80", Origins: ref("a")},
			{Name: "b/dns/80", DNSName: "example.com", DNSPort: 80, Origins: ref("b")},
			{Name: "c/svc/80", Origins: ref("c")},
		}
		m := &ir.Model{}
		for _, i := range order {
			m.Clusters = append(m.Clusters, all[i])
		}
		x := Translate(m, Options{}).Index
		for _, tc := range []struct {
			typeURL, name string
			want          ir.Origins
		}{
			{resourcev3.ClusterType, "a/svc/80", ref("a")},
			{resourcev3.EndpointType, "a/svc/80", ref("a")},
			{resourcev3.ClusterType, "b/dns/80", ref("b")},
			{resourcev3.EndpointType, "b/dns/80", nil},
			{resourcev3.ClusterType, "c/svc/80", ref("c")},
			{resourcev3.ClusterType, "d/svc/80", nil},
		} {
			if got := x.Objects(tc.typeURL, []string{tc.name}, ""); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, %s %s: %v, want %v", order, tc.typeURL, tc.name, got, tc.want)
			}
			if got := x.Served(tc.typeURL, []string{tc.name}); got != (tc.want != nil) {
				t.Errorf("order %v, %s %s: served %v, want %v", order, tc.typeURL, tc.name, got, tc.want != nil)
			}
		}
	}
}
