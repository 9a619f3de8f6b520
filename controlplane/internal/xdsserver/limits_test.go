package xdsserver

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// TestRejectionsAreBounded: many streams NACKing large messages keep a
// bounded number of rejections with bounded messages.
func TestRejectionsAreBounded(t *testing.T) {
	s := quietServer()
	s.Limits.MaxRejections = 10
	var seen atomic.Int64
	var longest atomic.Int64
	s.OnRejection = func(r Rejection) {
		seen.Add(1)
		if n := int64(len(r.Message)); n > longest.Load() {
			longest.Store(n)
		}
	}
	update(t, s, switched(t, "a"))
	ads := serve(t, s)
	big := strings.Repeat("cluster a: no. ", 200_000) // 3 MB
	const streams = 30
	for range streams {
		st := sotwStream(t, ads)
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
			t.Fatal(err)
		}
		r := recv(t, st)
		for range 3 {
			if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: r.Nonce,
				ErrorDetail: &rpcstatus.Status{Message: big}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "the NACKs were not all read", func() bool { return seen.Load() == 3*streams })
	rejs := s.Rejections()
	if len(rejs) > 10 {
		t.Errorf("%d rejections kept, want at most 10", len(rejs))
	}
	for _, r := range rejs {
		if len(r.Message) > MaxMessage+3 {
			t.Errorf("a rejection keeps %d bytes of message", len(r.Message))
		}
	}
	if longest.Load() > MaxMessage+3 {
		t.Errorf("OnRejection saw a %d-byte message", longest.Load())
	}
}

func TestStreamsPerPeerAreLimited(t *testing.T) {
	s := quietServer()
	s.Limits.StreamsPerPeer = 3
	update(t, s, switched(t, "a"))
	ads := serve(t, s)
	for range 3 {
		st := sotwStream(t, ads)
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
			t.Fatal(err)
		}
		recv(t, st)
	}
	st := sotwStream(t, ads)
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if got := refused(t, st); got.Code() != codes.ResourceExhausted {
		t.Errorf("fourth stream of one peer: %v, want ResourceExhausted", got)
	}
	if n := s.Refused()["streams_per_peer"]; n != 1 {
		t.Errorf("refused streams_per_peer = %d, want 1", n)
	}
}

func TestNamesPerSubscriptionAreLimited(t *testing.T) {
	s := quietServer()
	s.Limits.NamesPerSubscription = 100
	update(t, s, switched(t, "a"))
	for _, delta := range []bool{false, true} {
		t.Run(fmt.Sprint("delta=", delta), func(t *testing.T) {
			names := make([]string, 101)
			for i := range names {
				names[i] = fmt.Sprint("r", i)
			}
			c := connect(t, s, delta)
			c.subscribe(resourcev3.RouteType, names...)
			select {
			case _, ok := <-c.got:
				if ok {
					t.Error("a response to 101 names over the limit of 100")
				}
			case <-time.After(5 * time.Second):
				t.Error("a subscription to 101 names over the limit of 100 was not refused")
			}
		})
	}
	if n := s.Refused()["names_per_subscription"]; n != 2 {
		t.Errorf("refused names_per_subscription = %d, want 2", n)
	}
}

func TestRequestSizeIsLimited(t *testing.T) {
	s := quietServer()
	s.Limits.MaxRequestBytes = 64 << 10
	update(t, s, switched(t, "a"))
	st := sotwStream(t, serve(t, s))
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType,
		ErrorDetail: &rpcstatus.Status{Message: strings.Repeat("x", 100<<10)}}); err != nil {
		t.Fatal(err)
	}
	if got := refused(t, st); got.Code() != codes.ResourceExhausted {
		t.Errorf("a 100 KiB request over a 64 KiB limit: %v, want ResourceExhausted", got)
	}
	eventually(t, "the refusal was not counted", func() bool { return s.Refused()["request_size"] == 1 })
}

// TestRejectionsPerTypeAreBounded: streams rejecting one type keep at
// most MaxRejectionsPerType of it, and leave room for the other types.
func TestRejectionsPerTypeAreBounded(t *testing.T) {
	s := quietServer()
	s.Limits.MaxRejectionsPerType = 3
	update(t, s, switched(t, "a"))
	ads := serve(t, s)
	var seen atomic.Int64
	s.OnRejection = func(Rejection) { seen.Add(1) }
	for range 10 {
		st := sotwStream(t, ads)
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
			t.Fatal(err)
		}
		r := recv(t, st)
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: r.Nonce,
			ErrorDetail: &rpcstatus.Status{Message: "cluster a: no"}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the NACKs were not all read", func() bool { return seen.Load() == 10 })
	s.mu.Lock()
	kept := s.keptByType[resourcev3.ClusterType]
	s.mu.Unlock()
	if kept != 3 {
		t.Errorf("%d cluster rejections kept, want 3", kept)
	}
	if n := s.Refused()[RefusedRejectionsFull]; n != 7 {
		t.Errorf("refused rejections_full = %d, want 7", n)
	}
}
