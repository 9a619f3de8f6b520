package serverkittest

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/portcullis/portcullis/serverkit"
)

func TestStart(t *testing.T) {
	s := Start(t, Options(), func(opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
		return serverkit.New(opts, logger, nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(s.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health over Conn: %v, %v", h, err)
	}
	resp, err := http.Get("http://" + s.MetricsAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}
