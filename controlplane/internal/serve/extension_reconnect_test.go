package serve

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/extension/sdk"
)

// serveExtensionAt serves srv on addr ("127.0.0.1:0": a free port) until
// stop is called or the test ends, and returns the address it serves on.
func serveExtensionAt(t *testing.T, addr string, srv *sdk.Server) (string, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sdk.Serve(ctx, lis, srv) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("sdk.Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// An extension server stopped and started again: the build whose calls
// failed while it was down is made again as soon as its connection is
// ready again, not when the retry timer next fires (it never does here),
// and the recovered configuration is published.
func TestExtensionReconnectRetriesAtOnce(t *testing.T) {
	var failing atomic.Bool // never set: only the stop makes the calls fail
	addr, stop := serveExtensionAt(t, "127.0.0.1:0", headerServer(&failing))
	s := extensionServer(t, addr, extension.FailClosed)
	// The timer, the fallback, does not fire within the test: only the
	// connection becoming ready again can bring the retry.
	s.retryMin, s.retryMax = time.Hour, time.Hour
	updates := make(chan *objects.Set, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.loop(ctx, updates, nil) }()
	t.Cleanup(func() { cancel(); <-done })

	// state is virtual host a's route prefix and whether it has the
	// extension's header, as last published, and the number of objects
	// with ExtensionError problems.
	state := func() (prefix string, header bool, problems int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lastRes == nil || s.lastRes.Resources == nil {
			return "", false, -1
		}
		vh := vhosts(t, s.lastRes.Resources)["a.example.com"]
		return vh.GetRoutes()[0].GetMatch().GetPathSeparatedPrefix(), hasExtHeader(vh), len(s.extProblems)
	}
	wait := func(what string, cond func(prefix string, header bool, problems int) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			p, h, n := state()
			if cond(p, h, n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s (prefix %q, header %v, objects with ExtensionError %d)", what, p, h, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	updates <- extensionObjects(t, "/a")
	wait("published with the extension's change", func(p string, h bool, n int) bool { return p == "/a" && h && n == 0 })

	stop()
	updates <- extensionObjects(t, "/a2")
	wait("the change built while the extension is down fails its calls (Closed: the last configuration stays)",
		func(p string, h bool, n int) bool { return p == "/a" && h && n > 0 })

	serveExtensionAt(t, addr, headerServer(&failing))
	wait("the change published once the extension is back, without an update",
		func(p string, h bool, n int) bool { return p == "/a2" && h && n == 0 })
}
