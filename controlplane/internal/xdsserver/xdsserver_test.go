package xdsserver

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

func resources(clusters ...string) *translator.Resources {
	r := &translator.Resources{Listeners: []proto.Message{&listenerv3.Listener{Name: "ingress_http"}}}
	for _, c := range clusters {
		r.Clusters = append(r.Clusters, &clusterv3.Cluster{Name: c, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}})
	}
	return r
}

// publish updates the server and plays the clusters response Envoy would
// get; it returns the version of the clusters.
func publish(t *testing.T, s *Server, r *translator.Resources, nonce string) string {
	t.Helper()
	if _, err := s.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	cur := s.world.Load().tables[resourcev3.ClusterType]
	v := cur.versionString()
	s.onResponse(1, &discoveryv3.DiscoveryResponse{TypeUrl: resourcev3.ClusterType, VersionInfo: v, Nonce: nonce}, cur, nil, true)
	return v
}

func nack(s *Server, kept, nonce, msg string) {
	mustAccept(s.onRequest(1, &discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, VersionInfo: kept, ResponseNonce: nonce, ErrorDetail: &status.Status{Message: msg}}))
}

func ack(s *Server, version, nonce string) {
	mustAccept(s.onRequest(1, &discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, VersionInfo: version, ResponseNonce: nonce}))
}

// mustAccept fails the test (by a panic: the helpers have no testing.T)
// when a request is refused, which these never are.
func mustAccept(err error) {
	if err != nil {
		panic(err)
	}
}

func TestRejectionAttribution(t *testing.T) {
	tests := []struct {
		name          string
		message       string
		wantResources []string
	}{
		{"the message names the cluster", "Error adding/updating cluster(s) service/ns/b/443: SNI names containing NULL-byte are not allowed", []string{"service/ns/b/443"}},
		{"otherwise the clusters that changed since the accepted version", "something went wrong", []string{"service/ns/b/443", "service/ns/c/80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			changes := 0
			s.OnChange = func() { changes++ }
			v1 := publish(t, s, resources("service/ns/a/80"), "n1")
			ack(s, v1, "n1")
			v2 := publish(t, s, resources("service/ns/a/80", "service/ns/b/443", "service/ns/c/80"), "n2")
			nack(s, v1, "n2", tt.message)

			rejs := s.Rejections()
			if len(rejs) != 1 {
				t.Fatalf("rejections = %+v, want one", rejs)
			}
			r := rejs[0]
			if r.Version != v2 || r.Accepted != v1 || !slices.Equal(r.Resources, tt.wantResources) {
				t.Errorf("rejection = version %s accepted %s resources %v, want %s %s %v", r.Version, r.Accepted, r.Resources, v2, v1, tt.wantResources)
			}
			if changes != 1 {
				t.Errorf("OnChange called %d times, want 1", changes)
			}

			// A request that still carries the old version (e.g. a new
			// subscription) is no ACK of the rejected response.
			ack(s, v1, "n2")
			if len(s.Rejections()) != 1 {
				t.Error("a request with the kept version cleared the rejection")
			}
			v3 := publish(t, s, resources("service/ns/a/80"), "n3")
			ack(s, v3, "n3")
			if len(s.Rejections()) != 0 || s.Acked()[resourcev3.ClusterType] != v3 {
				t.Errorf("after the ACK of %s: rejections %+v, acked %v", v3, s.Rejections(), s.Acked())
			}
			if changes != 2 {
				t.Errorf("OnChange called %d times, want 2 (rejected, accepted again)", changes)
			}
		})
	}
}

func TestUnchangedResourcesPublishNothing(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	v1, _ := s.Update(context.Background(), resources("a"))
	v2, _ := s.Update(context.Background(), resources("a"))
	v3, _ := s.Update(context.Background(), resources("a", "b"))
	if v1 != v2 || v3 == v2 {
		t.Errorf("versions %s %s %s: want the same version for the same resources and a new one for a change", v1, v2, v3)
	}
}

func TestDeltaRejections(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	changes := 0
	s.OnChange = func() { changes++ }
	var nacks []Rejection
	s.OnRejection = func(r Rejection) { nacks = append(nacks, r) }
	respond := func(nonce, version string, names ...string) {
		resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resourcev3.ClusterType, SystemVersionInfo: version, Nonce: nonce}
		for _, n := range names {
			resp.Resources = append(resp.Resources, &discoveryv3.Resource{Name: n})
		}
		s.onDeltaResponse(1, nil, resp)
	}
	request := func(nonce, errMsg string) {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: nonce}
		if errMsg != "" {
			req.ErrorDetail = &status.Status{Message: errMsg}
		}
		if err := s.onDeltaRequest(1, req); err != nil {
			t.Fatal(err)
		}
	}
	respond("n1", "1", "a", "b")
	request("n1", "")
	respond("n2", "2", "b", "c")
	request("n2", "Error adding/updating cluster(s) c: bad")
	if r := s.Rejections(); len(r) != 1 || !slices.Equal(r[0].Resources, []string{"c"}) || r[0].Version != "2" || r[0].Accepted != "1" {
		t.Fatalf("rejections = %+v, want c rejected in version 2, 1 kept", r)
	}
	if len(nacks) != 1 || !slices.Equal(nacks[0].Resources, []string{"c"}) {
		t.Fatalf("OnRejection got %+v, want one call for c", nacks)
	}
	// A later response that does not touch c settles nothing about it.
	respond("n3", "3", "a")
	request("n3", "")
	if len(s.Rejections()) != 1 {
		t.Fatal("an ACK of other clusters cleared the rejection of c")
	}
	// One that replaces c does.
	respond("n4", "4", "c")
	request("n4", "")
	if len(s.Rejections()) != 0 || changes != 2 || len(nacks) != 1 {
		t.Errorf("rejections %+v, OnChange %d times, OnRejection %d times; want none, 2 and 1", s.Rejections(), changes, len(nacks))
	}
}

// TestHashResourcesReusesKnownSums: a message hashed by the last update is
// not hashed again, a list that is the last update's is not looked at, and
// the hashes are those computed from scratch.
func TestHashResourcesReusesKnownSums(t *testing.T) {
	r := resources("a", "b")
	want, err := hashResources(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantHash, wantPer := want.hash, want.per
	if len(want.encoded) != 3 {
		t.Errorf("%d encodings, want one per resource (3)", len(want.encoded))
	}
	n := 0
	for _, th := range want.types {
		n += len(th.sums)
	}
	if n != 3 {
		t.Fatalf("%d sums, want one per resource (3)", n)
	}
	other, _ := hashResources(resources("a", "b"), nil)
	for _, tc := range []struct {
		name string
		last map[string]*typeHash
	}{
		{"all known", want.types},
		{"none known", nil},
		{"other messages known", other.types},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hashResources(r, tc.last)
			if err != nil {
				t.Fatal(err)
			}
			if h.hash != wantHash || !maps.EqualFunc(h.per, wantPer, maps.Equal) {
				t.Errorf("hashes differ from a fresh hashing: %s %v, want %s %v", h.hash, h.per, wantHash, wantPer)
			}
		})
	}
	// What the last call left is used as is: a wrong sum or digest shows
	// that it was not recomputed (the translator's cached messages are
	// never modified).
	for _, tc := range []struct {
		name string
		fake func(th typeHash) typeHash
	}{
		{"a known message's sum, in another list", func(th typeHash) typeHash {
			th.list, th.sums = nil, maps.Clone(th.sums)
			th.sums[r.Clusters[0]] = sum{sha: [32]byte{1}}
			return th
		}},
		{"the same list's digest", func(th typeHash) typeHash {
			th.digest = [32]byte{1}
			return th
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := maps.Clone(want.types)
			fake := tc.fake(*last[resourcev3.ClusterType])
			last[resourcev3.ClusterType] = &fake
			if h, _ := hashResources(r, last); h.hash == wantHash {
				t.Error("what the last call left was computed again")
			} else if len(h.encoded) != 0 {
				t.Errorf("%d encodings, want none (every message known)", len(h.encoded))
			}
		})
	}
}

// TestUpdateKeepsUnchangedTables: a type whose list is the published one,
// message for message, keeps its table; a list of other messages is
// compared by version, and a changed one makes a new table.
func TestUpdateKeepsUnchangedTables(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler))
	first := resources("a", "b")
	if _, err := s.Update(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	clusters := func() *table { return s.world.Load().tables[resourcev3.ClusterType] }
	was := clusters()
	for _, tc := range []struct {
		name    string
		r       func() *translator.Resources
		newOnes bool // a new table of clusters
	}{
		{"the same clusters, another listener", func() *translator.Resources {
			r := *first
			r.Listeners = []proto.Message{&listenerv3.Listener{Name: "ingress_http", StatPrefix: "x"}}
			return &r
		}, false},
		{"equal clusters, other messages", func() *translator.Resources { return resources("a", "b") }, false},
		{"a cluster more", func() *translator.Resources { return resources("a", "b", "c") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Update(context.Background(), tc.r()); err != nil {
				t.Fatal(err)
			}
			if now := clusters(); (now != was) != tc.newOnes {
				t.Errorf("new table of clusters: %v, want %v", now != was, tc.newOnes)
			}
			was = clusters()
		})
	}
}
