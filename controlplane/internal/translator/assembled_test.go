package translator

import (
	"bytes"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// checkAssembled fails unless rc's assembled encoding, when it has one, is
// proto's deterministic encoding of rc. Every test that builds a route
// configuration of several hosts calls it; pipeline's
// TestAssembledEncodings runs it over every golden case.
func checkAssembled(t *testing.T, rc *routev3.RouteConfiguration, routeBytes []string) {
	t.Helper()
	got, ok := assembled(rc, routeBytes)
	if !ok {
		if len(rc.VirtualHosts) > 1 {
			t.Errorf("%s: %d virtual hosts, no assembled encoding", rc.Name, len(rc.VirtualHosts))
		}
		return
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: assembled encoding differs from proto's (%d and %d bytes)", rc.Name, len(got), len(want))
	}
}

// A route configuration is assembled, byte for byte, with every field a
// shared one has: merged hosts' domains, per-host filter configuration,
// rate limits, ignore_port_in_host_matching after the virtual hosts.
func TestAssembledIsTheEncoding(t *testing.T) {
	route := func(p string) *ir.Route {
		return &ir.Route{Path: p, Clusters: []ir.WeightedCluster{{Cluster: "default/svc/80", Weight: 1}}}
	}
	hosts := []*ir.VirtualHost{
		{FQDN: "a.example.com", Routes: []*ir.Route{route("/"), route("/a")}},
		{FQDN: "b.example.com", Routes: []*ir.Route{route("/"), route("/a")}}, // merged with a
		{FQDN: "c.example.com", Routes: []*ir.Route{route("/c")}, RateLimit: &ir.LocalRateLimit{Requests: 10, Interval: time.Minute}},
		{FQDN: "d.example.com"},
	}
	for _, keep := range []bool{false, true} {
		rc, _, rb := routeConfig("shared", hosts, routeSettings{keepHostPort: keep}, nil)
		rc.IgnorePortInHostMatching = keep
		if len(rc.VirtualHosts) != 3 {
			t.Fatalf("%d virtual hosts, want 3 (a and b merged)", len(rc.VirtualHosts))
		}
		checkAssembled(t, rc, rb)
	}
	// Routes that could not be encoded are never assembled.
	rc, _, rb := routeConfig("shared", hosts, routeSettings{}, nil)
	rb[0] = "unmarshallable/a.example.com"
	if _, ok := assembled(rc, rb); ok {
		t.Error("assembled with a route encoding that is not one")
	}
}
