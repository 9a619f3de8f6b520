package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProcess builds a program with BuildBinary and drives it through
// StartProcess, Stop and Restart.
func TestProcess(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/portcullis/portcullis/e2e/harness/testdata/server"
	bin := BuildBinary(t, pkg)
	if again := BuildBinary(t, pkg); again != bin {
		t.Errorf("second BuildBinary = %s, want the cached %s", again, bin)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := NewProcess(t, "server", bin, addr)
	p.Env = []string{"GREETING=hello"}
	p.Start()
	waitGreeting(t, addr, "hello")

	p.Stop()
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if err := p.ExitErr(); err != nil {
		t.Errorf("graceful stop: exit %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := WaitTCP(ctx, addr); err == nil {
		t.Errorf("%s still accepts connections after Stop", addr)
	}

	p.Restart()
	waitGreeting(t, addr, "hello")
	logs := p.Logs()
	if strings.Count(logs, "listening on") != 2 || !strings.Contains(logs, "terminating") {
		t.Errorf("log does not show two runs and a graceful stop:\n%s", logs)
	}
}

func waitGreeting(t *testing.T, addr, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, "http://"+addr+"/", http.StatusOK); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != want {
		t.Errorf("greeting %q, want %q", b, want)
	}
}

func TestEventuallyReportsLastError(t *testing.T) {
	t.Parallel()
	n := 0
	Eventually(t, 5*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("attempt %d", n)
		}
		return nil
	})
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }() // fakeT.Fatalf's panic: it stops Eventually as FailNow would
		Eventually(ft, 100*time.Millisecond, func() error { return fmt.Errorf("still broken") })
	}()
	if !strings.Contains(ft.msg, "still broken") {
		t.Errorf("Eventually failure message %q lacks the last error", ft.msg)
	}
}

// fakeT records a Fatalf instead of failing the real test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
