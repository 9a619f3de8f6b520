package serve

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// TestRejectionStatusIsPaced: a storm of changes in what Envoy rejects
// publishes statuses at most once per rejectionStatusInterval; the last
// change is published when the interval has passed.
func TestRejectionStatusIsPaced(t *testing.T) {
	var p pacer
	p.every = time.Second
	t0 := time.Unix(1000, 0)
	published := 0
	for i := range 1000 {
		if p.ready(t0.Add(time.Duration(i) * time.Millisecond)) {
			published++
		}
	}
	if published != 1 {
		t.Errorf("%d publications in one second of changes, want 1", published)
	}
	if p.timer == nil {
		t.Fatal("the last changes are not scheduled")
	}
	p.fired(t0.Add(time.Second))
	if p.ready(t0.Add(time.Second + time.Millisecond)) {
		t.Error("published again right after the scheduled publication")
	}
}

// TestRejectionMetricLabels: the rejection counter's labels are the
// types the server serves, whatever type URL a NACK names.
func TestRejectionMetricLabels(t *testing.T) {
	s, err := newServer(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		s.countRejection(xdsserver.Rejection{TypeURL: "type.googleapis.com/made.up.T" + string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	n, err := testutil.GatherAndCount(s.metrics.registry, "portcullis_xds_rejections_total")
	if err != nil {
		t.Fatal(err)
	}
	if n > len(rejectionTypes)+1 {
		t.Errorf("%d rejection series, want at most %d", n, len(rejectionTypes)+1)
	}
	if n, err := testutil.GatherAndCount(s.metrics.registry, "portcullis_xds_refused_total"); err != nil || n != len(xdsserver.RefusedReasons) {
		t.Errorf("%d refused series (%v), want %d", n, err, len(xdsserver.RefusedReasons))
	}
}
