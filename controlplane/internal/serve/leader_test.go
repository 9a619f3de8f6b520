package serve

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
)

// chanProvider delivers the sets sent on its channel.
type chanProvider chan *objects.Set

func (p chanProvider) Run(ctx context.Context, update func(*objects.Set)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-p:
			update(s)
		}
	}
}

// recordingWriter records the objects of each batch it is handed.
type recordingWriter struct {
	mu      sync.Mutex
	batches [][]objects.Ref
}

func (w *recordingWriter) Write(_ context.Context, updates []statuswriter.Update) {
	var refs []objects.Ref
	for _, u := range updates {
		refs = append(refs, u.Ref)
	}
	w.mu.Lock()
	w.batches = append(w.batches, refs)
	w.mu.Unlock()
}

func (w *recordingWriter) take() [][]objects.Ref {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.batches
	w.batches = nil
	return b
}

// handLeadership leads while the test says so: each value on terms starts
// a term, which lasts until its context is cancelled by the test.
type handLeadership struct {
	terms   chan context.Context
	leading atomic.Bool
}

func (h *handLeadership) Run(ctx context.Context, lead func(context.Context)) {
	for {
		select {
		case <-ctx.Done():
			return
		case term := <-h.terms:
			h.leading.Store(true)
			lead(term)
			h.leading.Store(false)
		}
	}
}

func (h *handLeadership) Leading() bool { return h.leading.Load() }

// A replica that does not lead writes no status, however its objects
// change; on taking the lead it hands the writer every status of its last
// build (the writer skips those the API server already has), then each
// change; on losing it, it stops writing.
func TestOnlyTheLeaderWritesStatus(t *testing.T) {
	w := &recordingWriter{}
	lead := &handLeadership{terms: make(chan context.Context)}
	sets := make(chanProvider)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Pipeline: pipeline.DefaultOptions(), XDSAddress: "127.0.0.1:0",
			Provider: sets, Status: w, Leader: lead, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	sets <- extensionObjects(t, "/a")
	sets <- extensionObjects(t, "/a2")
	time.Sleep(300 * time.Millisecond)
	if got := w.take(); len(got) != 0 {
		t.Fatalf("a follower wrote statuses: %v", got)
	}

	term, lose := context.WithCancel(ctx)
	lead.terms <- term
	all := waitBatch(t, w)
	if !slices.Contains(all, proxyA) || !slices.Contains(all, proxyB) {
		t.Fatalf("on taking the lead the writer got %v; want every status of the last build (%v and %v)", all, proxyA, proxyB)
	}
	// A prefix without its slash: proxy a's status changes.
	sets <- extensionObjects(t, "a3")
	if got := waitBatch(t, w); !slices.Equal(got, []objects.Ref{proxyA}) {
		t.Errorf("the leader wrote %v after a change to %v alone", got, proxyA)
	}

	lose()
	waitFor(t, func() bool { return !lead.Leading() })
	sets <- extensionObjects(t, "/a4") // valid again
	time.Sleep(300 * time.Millisecond)
	if got := w.take(); len(got) != 0 {
		t.Fatalf("a replica that lost the lead wrote statuses: %v", got)
	}

	// Leading again: everything once more, with the change made while
	// following.
	term, lose = context.WithCancel(ctx)
	defer lose()
	lead.terms <- term
	if all := waitBatch(t, w); !slices.Contains(all, proxyA) || !slices.Contains(all, proxyB) {
		t.Fatalf("on leading again the writer got %v; want every status", all)
	}
}

// waitBatch waits for the writer's next batch (the first of those that
// came).
func waitBatch(t *testing.T, w *recordingWriter) []objects.Ref {
	t.Helper()
	var got [][]objects.Ref
	waitFor(t, func() bool {
		got = append(got, w.take()...)
		return len(got) > 0
	})
	return got[0]
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
