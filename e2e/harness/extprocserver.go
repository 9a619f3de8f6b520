package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ExtProcServer is a running extprocserver binary.
type ExtProcServer struct {
	*Process
	Addr        string // gRPC (h2c) host:port
	MetricsAddr string // /metrics and /healthz
}

// StartExtProcServer builds extprocserver, runs `serve` with configYAML on
// free loopback ports (and extraArgs, e.g. --pprof-address) and waits until
// /healthz answers.
func StartExtProcServer(t testing.TB, configYAML string, extraArgs ...string) *ExtProcServer {
	t.Helper()
	return StartExtProcServerEnv(t, configYAML, nil, extraArgs...)
}

// StartExtProcServerEnv is StartExtProcServer with env (KEY=VALUE) added
// to the server's environment, such as OTEL_EXPORTER_OTLP_ENDPOINT.
func StartExtProcServerEnv(t testing.TB, configYAML string, env []string, extraArgs ...string) *ExtProcServer {
	t.Helper()
	bin := BuildBinary(t, "github.com/portcullis/portcullis/extprocserver/cmd/extprocserver")
	cfg := filepath.Join(t.TempDir(), "extprocserver.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &ExtProcServer{
		Addr:        fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
	}
	args := append([]string{"serve", "--config", cfg,
		"--address", s.Addr, "--metrics-address", s.MetricsAddr, "--log-level", "warn"}, extraArgs...)
	s.Process = NewProcess(t, "extprocserver", bin, args...)
	s.Env = env
	s.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, "http://"+s.MetricsAddr+"/healthz", 200); err != nil {
		t.Fatalf("extprocserver not healthy: %v\n%s", err, s.Logs())
	}
	return s
}
