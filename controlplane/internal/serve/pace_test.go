package serve

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// TestRejectionStatusIsPaced: a storm of changes in what Envoy rejects
// publishes statuses at most once per interval; the last change is
// published when the interval has passed.
func TestRejectionStatusIsPaced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, out := make(chan struct{}, 1), make(chan struct{}, 1)
	go pace(ctx, in, out, 200*time.Millisecond)
	published := 0
	count := func() {
		select {
		case <-out:
			published++
		default:
		}
	}
	start := time.Now()
	for time.Since(start) < time.Second {
		select {
		case in <- struct{}{}:
		default:
		}
		count()
		time.Sleep(time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	count()
	// 1 s of changes: at once, then every 200 ms, and the last after.
	if published < 2 || published > 7 {
		t.Errorf("%d publications for 1 s of changes paced at 200 ms, want 2 to 7", published)
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
