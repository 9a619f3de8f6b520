package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Port is the port of a host:port address.
func Port(t testing.TB, addr string) int {
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// MustRequest is a GET request for url.
func MustRequest(t testing.TB, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// GetEcho sends a copy of req and decodes the echo upstream's answer, an
// error unless the status is want.
func GetEcho(c *http.Client, req *http.Request, want int) (*EchoRequest, error) {
	resp, err := c.Do(req.Clone(context.Background()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s: status %d, want %d: %s", req.URL, resp.StatusCode, want, body)
	}
	return DecodeEcho(body)
}

// EventuallyEcho retries until the configuration has reached Envoy.
func EventuallyEcho(t testing.TB, c *http.Client, req *http.Request, want int) *EchoRequest {
	t.Helper()
	var echo *EchoRequest
	Eventually(t, 30*time.Second, func() error {
		var err error
		echo, err = GetEcho(c, req, want)
		return err
	})
	return echo
}

// WantHeaders reports every header of want whose first value differs ("" for
// absent).
func WantHeaders(h http.Header, want map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got := h.Get(k); got != want[k] {
			errs = append(errs, fmt.Errorf("%s = %q, want %q", k, got, want[k]))
		}
	}
	return errors.Join(errs...)
}

// EventuallyStatus retries until a GET of url answers with status want.
func EventuallyStatus(t testing.TB, c *http.Client, url string, want int) {
	t.Helper()
	Eventually(t, 60*time.Second, func() error {
		code, err := StatusCode(c, url)
		if err != nil {
			return err
		}
		if code != want {
			return fmt.Errorf("%s: status %d, want %d", url, code, want)
		}
		return nil
	})
}

// StatusCode is the status of a GET of url.
func StatusCode(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// AuthChecks sums portcullis_authserver_checks_total from a metrics endpoint.
func AuthChecks(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "portcullis_authserver_checks_total{") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += f
	}
	return int(total)
}

// RunCommand runs a program and returns its combined output.
func RunCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// WriteConfigFile replaces a configuration file atomically, as a mounted
// ConfigMap changes.
func WriteConfigFile(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// MetricValue sums a Prometheus metric's samples (all label sets).
func MetricValue(t testing.TB, url, name string) float64 {
	t.Helper()
	v, err := metricValue(url, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func metricValue(url, name string) (float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics line %q: %v", line, err)
		}
		total += f
	}
	return total, nil
}

// FreeAddr is a free 127.0.0.1:port.
func FreeAddr(t testing.TB) string { return fmt.Sprintf("127.0.0.1:%d", FreePort(t)) }
