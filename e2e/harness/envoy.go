package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envoyStartTimeout bounds how long StartEnvoy waits for /ready to say LIVE.
// With an xDS bootstrap Envoy is LIVE once its first CDS/LDS answers arrive
// (or their initial_fetch_timeout, 15s by default, passes).
const envoyStartTimeout = 60 * time.Second

// Envoy is a running Envoy.
type Envoy struct {
	*Process
	AdminAddr string // host:port of the admin interface

	addrFile string
}

// StartEnvoy runs `envoy -c bootstrapPath` (plus extraArgs) and waits until
// its admin /ready says LIVE. The bootstrap must configure an admin address;
// port 0 is best, the harness learns the real one with --admin-address-path.
// Hot restart is disabled so parallel Envoys never share memory or sockets.
func StartEnvoy(t testing.TB, bootstrapPath string, extraArgs ...string) *Envoy {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "admin-address")
	args := append([]string{
		"-c", bootstrapPath,
		"--admin-address-path", addrFile,
		"--disable-hot-restart",
		"--log-level", "warn",
	}, extraArgs...)
	e := &Envoy{Process: NewProcess(t, "envoy", Tool(t, "envoy"), args...), addrFile: addrFile}
	e.Start()
	return e
}

// Start starts Envoy and waits until it is LIVE.
func (e *Envoy) Start() {
	e.t.Helper()
	os.Remove(e.addrFile)
	e.AdminAddr = ""
	e.Process.Start()
	if err := e.waitLive(); err != nil {
		e.t.Fatalf("envoy did not become ready: %v", err)
	}
}

// Restart stops Envoy and starts it again, waiting until it is LIVE.
func (e *Envoy) Restart() {
	e.t.Helper()
	e.Stop()
	e.Start()
}

func (e *Envoy) waitLive() error {
	ctx, cancel := context.WithTimeout(context.Background(), envoyStartTimeout)
	defer cancel()
	done := e.Done()
	return poll(ctx, func() error {
		select {
		case <-done:
			return permanentError{fmt.Errorf("envoy exited: %v", e.ExitErr())}
		default:
		}
		if e.AdminAddr == "" {
			b, err := os.ReadFile(e.addrFile)
			if err != nil || len(strings.TrimSpace(string(b))) == 0 {
				return fmt.Errorf("admin address not written yet to %s", e.addrFile)
			}
			e.AdminAddr = strings.TrimSpace(string(b))
		}
		body, err := e.Admin("/ready")
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(body)) != "LIVE" {
			return fmt.Errorf("/ready: %q", body)
		}
		return nil
	})
}

// Admin GETs path (with any query) from the admin interface and returns the
// body; a status other than 200 is an error.
func (e *Envoy) Admin(path string) ([]byte, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + e.AdminAddr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET admin %s: status %d: %q", path, resp.StatusCode, body)
	}
	return body, nil
}

// ConfigDump returns the JSON of /config_dump (secrets are redacted by Envoy).
func (e *Envoy) ConfigDump() ([]byte, error) {
	return e.Admin("/config_dump")
}

// Stat returns the value of the counter or gauge called exactly name, e.g.
// "http.ingress_http.ext_authz.denied". An unknown stat is an error.
func (e *Envoy) Stat(name string) (int64, error) {
	q := url.Values{"filter": {"^" + regexp.QuoteMeta(name) + "$"}}
	body, err := e.Admin("/stats?" + q.Encode())
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && k == name {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("envoy has no stat %q", name)
}
