package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func newEnvoyDrainCommand() *cobra.Command {
	var (
		admin     string
		drainTime time.Duration
		onSignal  bool
	)
	cmd := &cobra.Command{
		Use:   "envoy-drain",
		Short: "Drain an Envoy gracefully before it stops: fail its readiness, drain its listeners, wait",
		Long: `envoy-drain tells the Envoy whose admin interface is --envoy-admin-address to
stop taking traffic gracefully, then waits --drain-time before it returns:

  POST /healthcheck/fail              /ready answers 503: the Pod leaves its
                                      Services' endpoints, health checkers
                                      stop sending to it
  POST /drain_listeners?graceful&inboundonly
                                      HTTP/1 responses close their connections,
                                      HTTP/2 connections get a GOAWAY; listeners
                                      close after Envoy's --drain-time-s

Requests already accepted complete. It returns early if Envoy exits. Give
--drain-time the same value as Envoy's --drain-time-s.

With --on-signal it first waits for SIGTERM (or SIGINT): the Helm chart runs
it as a sidecar of Envoy, which Kubernetes signals when the Pod terminates,
while Envoy's own preStop hook keeps Envoy running for the drain time.`,
		Example: `  portcullis envoy-drain --envoy-admin-address 127.0.0.1:9901 --drain-time 30s`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onSignal {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				<-ctx.Done()
				stop()
			}
			return drainEnvoy(cmd.Context(), admin, drainTime, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&admin, "envoy-admin-address", "127.0.0.1:9901", "Envoy's admin interface, host:port")
	f.DurationVar(&drainTime, "drain-time", 30*time.Second, "how long to wait once the drain started (Envoy's --drain-time-s)")
	f.BoolVar(&onSignal, "on-signal", false, "wait for SIGTERM or SIGINT before draining (as a sidecar)")
	return cmd
}

// drainEnvoy fails Envoy's health checks, drains its listeners gracefully
// and waits drainTime, or until Envoy's admin interface stops answering.
func drainEnvoy(ctx context.Context, admin string, drainTime time.Duration, log io.Writer) error {
	c := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/healthcheck/fail", "/drain_listeners?graceful&inboundonly"} {
		resp, err := c.Post("http://"+admin+path, "", nil)
		if err != nil {
			return fmt.Errorf("envoy-drain: %s: %w", path, err)
		}
		// Only the status is read; closing returns the connection.
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("envoy-drain: %s: status %d", path, resp.StatusCode)
		}
	}
	fmt.Fprintf(log, "envoy-drain: Envoy at %s is draining; waiting %s\n", admin, drainTime)
	deadline := time.Now().Add(drainTime)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Second, time.Until(deadline))):
		}
		resp, err := c.Get("http://" + admin + "/ready")
		if err != nil {
			fmt.Fprintf(log, "envoy-drain: Envoy exited\n")
			return nil
		}
		// Envoy answering at all is all this asks.
		_ = resp.Body.Close()
	}
	return nil
}
