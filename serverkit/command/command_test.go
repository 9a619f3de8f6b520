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
	"go.opentelemetry.io/otel"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
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

// TestRunTracesFromEnv runs a serving subcommand the way a Deployment
// with OTEL_EXPORTER_OTLP_ENDPOINT does: a call carrying a traceparent is
// exported, in the caller's trace and under the default service name,
// by the flush that follows SIGTERM (the batch would wait 5 s).
func TestRunTracesFromEnv(t *testing.T) {
	col := serverkittest.StartOTLPCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Cleanup(func() { otel.SetTracerProvider(tracenoop.NewTracerProvider()) }) // Run set the global one

	built := make(chan string, 1)
	root, s := NewRoot("testbin", "short help", "long help")
	root.AddCommand(&cobra.Command{
		Use: "serve",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return s.Run(cmd, func(_ context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
				srv, err := serverkit.New(opts, logger, func(g *grpc.Server) {
					g.RegisterService(&grpc.ServiceDesc{ServiceName: "command.test.Test", HandlerType: (*any)(nil),
						Methods: []grpc.MethodDesc{{MethodName: "Ok", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
							return &emptypb.Empty{}, dec(new(emptypb.Empty))
						}}}}, struct{}{})
				})
				if err == nil {
					built <- srv.Addr().String()
				}
				return srv, err
			})
		},
	})
	root.SetArgs([]string{"serve", "--address=127.0.0.1:0", "--metrics-address="})
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
	conn := serverkittest.Dial(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cctx, parent := serverkittest.RemoteParent(ctx)
	if err := conn.Invoke(cctx, "/command.test.Test/Ok", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d: %s", code, logs.String())
	}
	spans := col.Spans()
	if len(spans) != 1 {
		t.Fatalf("collector received %d spans, want the call's one", len(spans))
	}
	got, tid, sid := spans[0], parent.TraceID(), parent.SpanID()
	if got.Span.GetName() != "command.test.Test/Ok" || got.Service != "portcullis-serve" ||
		!bytes.Equal(got.Span.GetTraceId(), tid[:]) || !bytes.Equal(got.Span.GetParentSpanId(), sid[:]) {
		t.Errorf("exported %q of service %q in trace %x under %x; want command.test.Test/Ok of portcullis-serve under %s/%s",
			got.Span.GetName(), got.Service, got.Span.GetTraceId(), got.Span.GetParentSpanId(), parent.TraceID(), parent.SpanID())
	}
}
