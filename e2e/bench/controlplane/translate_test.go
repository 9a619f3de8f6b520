package controlplane

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

// translateRun is one `portcullis translate` of a generated set.
type translateRun struct {
	pipeline, wall time.Duration
	maxRSS         int64 // bytes
	stats          string
}

var statsLine = regexp.MustCompile(`stats: objects=(\d+) load=(\S+) pipeline=(\S+) render=(\S+)`)

// runTranslate runs the CLI on dir (or a file) as a child process, with
// more flags: the pipeline time comes from its --stats line, the peak RSS
// from the kernel (rusage).
func runTranslate(t testing.TB, portcullis, dir string, wantObjects int, flags ...string) translateRun {
	t.Helper()
	cmd := exec.Command(portcullis, append([]string{"translate", "-f", dir, "-o", "json", "--stats"}, flags...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr // stdout to /dev/null: the document is large
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("portcullis translate: %v\n%s", err, stderr.String())
	}
	wall := time.Since(start)
	m := statsLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no stats line in: %s", stderr.String())
	}
	if m[1] != fmt.Sprint(wantObjects) {
		t.Fatalf("translate reported %s objects, want %d", m[1], wantObjects)
	}
	d, err := time.ParseDuration(m[3])
	if err != nil {
		t.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return translateRun{pipeline: d, wall: wall, maxRSS: ru.Maxrss * 1024, stats: m[0]}
}

// writeSet writes the objects of n hosts of w as YAML files for the file
// provider and translate.
func writeSet(t testing.TB, w workload, n int, cert *harness.KeyPair) string {
	t.Helper()
	dir := t.TempDir()
	harness.WriteYAML(t, dir, "shared.yaml", w.shared(cert)...)
	harness.WriteYAML(t, dir, "hosts.yaml", w.hostObjects(0, n)...)
	return dir
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
