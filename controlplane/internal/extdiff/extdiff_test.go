package extdiff

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Diff reports, in order: a route configuration's own fields apart from
// its virtual hosts, a virtual host removed and one added, a cluster
// removed; unchanged resources not at all.
func TestDiff(t *testing.T) {
	rc := &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{
		{Name: "a", Domains: []string{"a"}}, {Name: "b", Domains: []string{"b"}},
	}}
	rc2 := proto.Clone(rc).(*routev3.RouteConfiguration)
	rc2.ValidateClusters = wrapperspb.Bool(true)
	rc2.VirtualHosts = []*routev3.VirtualHost{rc2.VirtualHosts[0], {Name: "c", Domains: []string{"c"}}}
	before := &translator.Resources{Routes: []proto.Message{rc}, Clusters: []proto.Message{&clusterv3.Cluster{Name: "x"}, &clusterv3.Cluster{Name: "y"}}}
	after := &translator.Resources{Routes: []proto.Message{rc2}, Clusters: []proto.Message{&clusterv3.Cluster{Name: "y"}}}
	got, err := Diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		lines = append(lines, string(c.Op)+" "+c.Resource)
	}
	want := []string{
		`changed RouteConfiguration "rc" (other than its virtual hosts)`,
		`removed virtual host "b" of RouteConfiguration "rc"`,
		`added virtual host "c" of RouteConfiguration "rc"`,
		`removed Cluster "x"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(got[0].Text, "+validateClusters: true") {
		t.Errorf("diff of the route configuration:\n%s", got[0].Text)
	}
}
