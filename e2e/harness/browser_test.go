package harness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestBrowserChromiumMissingFails: without Chromium the browser tests fail (never
// skip) and say how to install it.
func TestBrowserChromiumMissingFails(t *testing.T) {
	for _, env := range []string{"", "/nonexistent/chromium"} {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("PORTCULLIS_CHROMIUM", env)
		rec := &fatalRecorder{TB: t}
		done := make(chan string)
		go func() {
			defer close(done)
			done <- ChromiumPath(rec)
		}()
		if path := <-done; path != "" || !strings.Contains(rec.msg, "run `make tools`") {
			t.Errorf("PORTCULLIS_CHROMIUM=%q: path %q, failure %q; want a failure that says run `make tools`", env, path, rec.msg)
		}
	}
}
