package command

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/portcullis/portcullis/serverkit"
)

// newTestRoot is a root with one serving subcommand "serve" whose server
// has only health; built reports the address it bound.
func newTestRoot(built chan<- string) *cobra.Command {
	root, s := NewRoot("testbin", "short help", "long help")
	root.AddCommand(&cobra.Command{
		Use:  "serve",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return s.Run(cmd, func(_ context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
				if opts.Registry == nil {
					return nil, errors.New("no registry")
				}
				srv, err := serverkit.New(opts, logger, nil)
				if err == nil && built != nil {
					built <- srv.Addr().String()
				}
				return srv, err
			})
		},
	})
	root.AddCommand(&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return errors.New("boom") }})
	return root
}

func TestExecute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"version", []string{"--version"}, 0, "testbin ", ""},
		{"help shows the serving flags", []string{"serve", "--help"}, 0, "--pprof-address", ""},
		{"completion", []string{"completion", "bash"}, 0, "bash completion", ""},
		{"error line", []string{"fail"}, 1, "", "testbin: boom\n"},
		{"bad serving flag", []string{"serve", "--log-format=xml"}, 1, "", "testbin: --log-format must be text or json"},
		{"unknown flag", []string{"serve", "--nope"}, 1, "", "testbin: unknown flag: --nope"},
		{"extra argument", []string{"serve", "x"}, 1, "", "testbin: unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			root := newTestRoot(nil)
			root.SetArgs(tc.args)
			root.SetOut(&out)
			root.SetErr(&stderr)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if code := execute(ctx, root, &stderr); code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.out)
			}
			if !strings.HasPrefix(stderr.String(), tc.err) {
				t.Errorf("stderr %q, want it to start with %q", stderr.String(), tc.err)
			}
		})
	}
}

// TestRunServesUntilCancelled runs a serving subcommand with pprof, talks
// to both listeners, and stops it the way SIGTERM does.
func TestRunServesUntilCancelled(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr := l.Addr().String()
	l.Close()

	built := make(chan string, 1)
	root := newTestRoot(built)
	root.SetArgs([]string{"serve", "--address=127.0.0.1:0", "--metrics-address=", "--pprof-address=" + pprofAddr})
	var logs bytes.Buffer
	root.SetErr(&logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- execute(ctx, root, &logs) }()

	var addr string
	select {
	case addr = <-built:
	case code := <-done:
		t.Fatalf("exited with %d: %s", code, logs.String())
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
	defer hcancel()
	if h, err := healthpb.NewHealthClient(conn).Check(hctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v", h, err)
	}
	var status int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline"); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
			break
		}
	}
	if status != http.StatusOK {
		t.Errorf("/debug/pprof/cmdline: status %d, want 200", status)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d after cancel", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop")
	}
	if _, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline"); err == nil {
		t.Errorf("pprof still served after the server stopped")
	}
}
