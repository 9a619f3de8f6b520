//go:build soak

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

// The soak (make soak; issue 17, fault test 6): the whole stack at
// saturation for PORTCULLIS_SOAK_DURATION (default 10m): Envoy, portcullis
// serve on a real API server, an authserver checking every request
// (global authorization) and an extprocserver processing every request's
// and response's headers (global processing), to an echo upstream, under a
// closed-loop load of PORTCULLIS_SOAK_CONCURRENCY (default 32) workers.
// Every process's goroutines (its go_goroutines metric; Envoy has none),
// open files and RSS are read after a warm-up and at the end: none may
// grow beyond what a leak-free process varies by, and no request may fail.
const soakNS = "portcullis-soak"

func TestSoak(t *testing.T) {
	duration := envDuration(t, "PORTCULLIS_SOAK_DURATION", 10*time.Minute)
	concurrency := envInt(t, "PORTCULLIS_SOAK_CONCURRENCY", 32)

	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr, authMetrics := harness.FreeAddr(t), harness.FreeAddr(t)
	auth := harness.StartProcess(t, "authserver", authserver, "testserver", "--address", authAddr, "--metrics-address", authMetrics)
	proc := harness.StartExtProcServer(t, markingProcessor("soak"))
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`globalExtAuth:
  extensionService: %[1]s/auth
  responseTimeout: 5s
globalExtProc:
  processor:
    grpcService:
      extensionRef: {name: proc, namespace: %[1]s}
      responseTimeout: 5s
    processingMode:
      requestHeaderMode: SEND
      responseHeaderMode: SEND
`, soakNS))

	api := harness.StartAPIServer(t, harness.CRDDirs(t)...)
	portcullisBin := harness.BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	httpAddr, xds, admin := harness.FreeAddr(t), harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartProcess(t, "portcullis", portcullisBin, "serve", "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--enable-external-name-services", "--allow-loopback-external-names", "--config", cfg,
		"--xds-address", xds, "--admin-address", admin, "--envoy-http-address", httpAddr, "--envoy-https-address", harness.FreeAddr(t))
	envoy := harness.StartEnvoyOn(t, xds)
	echo := harness.StartEcho(t, "echo")

	h2c := "h2c"
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: soakNS}}}
	objs = append(objs, harness.LoopbackExternalName(soakNS, "echo", 80, echo.Port)...)
	for name, addr := range map[string]string{"auth": authAddr, "proc": proc.Addr} {
		objs = append(objs, harness.LoopbackExternalName(soakNS, name, 9000, harness.Port(t, addr))...)
		objs = append(objs, &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}})
	}
	objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: soakNS, Name: "soak"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "soak.example.com"},
		Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
	}})
	ctx := context.Background()
	if err := api.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	// Checked and processed: the processor's marks on both ways.
	harness.Eventually(t, time.Minute, func() error {
		got, err := fetchProcessed(c, "http://soak.example.com/")
		if err != nil {
			return err
		}
		if got != (processed{"soak", "soak"}) {
			return fmt.Errorf("processed by %+v, want the soak processor both ways", got)
		}
		return nil
	})

	do := func(ctx context.Context, _ int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://soak.example.com/soak", nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("x-response-processed-by") != "soak" {
			return fmt.Errorf("status %d, processed by %q", resp.StatusCode, resp.Header.Get("x-response-processed-by"))
		}
		return nil
	}
	// Warm-up: pools, caches and buffers at their working size.
	warmup := loadgen.Run(ctx, "warm-up", loadgen.Config{Concurrency: concurrency, Duration: 30 * time.Second}, do)
	if warmup.Errors > 0 {
		t.Fatalf("warm-up: %d of %d requests failed: %v", warmup.Errors, warmup.Requests, warmup.FirstError)
	}
	procs := []soakProcess{
		{"portcullis", cp.Pid(), "http://" + admin + "/metrics"},
		{"envoy", envoy.Pid(), ""},
		{"authserver", auth.Pid(), "http://" + authMetrics + "/metrics"},
		{"extprocserver", proc.Pid(), "http://" + proc.MetricsAddr + "/metrics"},
	}
	start := map[string]soakSample{}
	for _, p := range procs {
		start[p.name] = p.sample(t)
	}
	load := harness.StartSteadyLoad(concurrency, duration, do)
	report := load.Wait()
	t.Logf("soak of %s at %d workers: %s, %.0f requests/s", duration, concurrency, report, float64(report.Requests)/duration.Seconds())
	if report.Errors > 0 {
		t.Errorf("%d of %d requests failed; first: %v", report.Errors, report.Requests, report.FirstError)
	}
	for _, p := range procs {
		select {
		case <-map[string]<-chan struct{}{"portcullis": cp.Done(), "envoy": envoy.Done(), "authserver": auth.Done(), "extprocserver": proc.Done()}[p.name]:
			t.Fatalf("%s exited during the soak", p.name)
		default:
		}
		end := p.sample(t)
		s := start[p.name]
		t.Logf("%-13s goroutines %4d -> %4d   open files %4d -> %4d   RSS %6.1f -> %6.1f MiB", p.name,
			s.goroutines, end.goroutines, s.files, end.files, float64(s.rss)/(1<<20), float64(end.rss)/(1<<20))
		// Flat: a leak of one goroutine, file or buffer per request (or per
		// second) would be thousands; these bounds are far above what a
		// process's pools vary by and far below such leaks.
		if end.goroutines > s.goroutines+50 {
			t.Errorf("%s: goroutines grew from %d to %d", p.name, s.goroutines, end.goroutines)
		}
		if end.files > s.files+50 {
			t.Errorf("%s: open files grew from %d to %d", p.name, s.files, end.files)
		}
		if end.rss > s.rss+s.rss/2+32<<20 {
			t.Errorf("%s: RSS grew from %d to %d bytes", p.name, s.rss, end.rss)
		}
	}
}

type soakProcess struct {
	name    string
	pid     int
	metrics string // its Prometheus endpoint, "" for none
}

type soakSample struct {
	goroutines int // -1: not known
	files      int
	rss        int64
}

func (p soakProcess) sample(t *testing.T) soakSample {
	t.Helper()
	s := soakSample{goroutines: -1}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	s.files = len(fds)
	s.rss = procStatus(t, p.pid, "VmRSS")
	if p.metrics != "" {
		// A Go process has a goroutine at least: 0 is a missing metric.
		n := harness.MetricValue(t, p.metrics, "go_goroutines")
		if n < 1 {
			t.Fatalf("%s: no go_goroutines in %s", p.name, p.metrics)
		}
		s.goroutines = int(n)
	}
	return s
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
