package xdsserver

import (
	"io"
	"log/slog"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestLags follows one stream through responses, ACKs and a NACK: it is
// behind from the first response it has not ACKed until it ACKs the
// latest, and a NACK keeps it behind.
func TestLags(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	behind := func(want int) time.Duration {
		t.Helper()
		l := s.Lags(time.Now())[resourcev3.ClusterType]
		if l.Behind != want {
			t.Fatalf("streams behind = %d, want %d", l.Behind, want)
		}
		if want == 0 && l.Oldest != 0 {
			t.Fatalf("oldest wait %v with no stream behind", l.Oldest)
		}
		return l.Oldest
	}
	behind(0)
	v1 := publish(t, s, resources("a"), "n1")
	behind(1)
	ack(s, v1, "n1")
	behind(0)

	v2 := publish(t, s, resources("a", "b"), "n2")
	time.Sleep(20 * time.Millisecond)
	v3 := publish(t, s, resources("a", "b", "c"), "n3")
	first := behind(1)
	if first < 20*time.Millisecond {
		t.Errorf("oldest wait %v, want at least the 20 ms since the first response not ACKed", first)
	}
	// ACKing the older of two responses: still behind, waiting since the newer one.
	ack(s, v2, "n2")
	if second := behind(1); second >= first {
		t.Errorf("after ACKing n2 the wait is %v, want less than %v (it waits for n3 only)", second, first)
	}
	nack(s, v2, "n3", "refused")
	behind(1)
	ack(s, v3, "n3")
	behind(0)

	// A closed stream is behind on nothing.
	publish(t, s, resources("d"), "n4")
	behind(1)
	s.closeStream(1, "peer")
	behind(0)
}
