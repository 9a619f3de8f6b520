// Package command is the command-line plumbing shared by Portcullis's gRPC
// servers (authserver, extprocserver): the root command with --version and
// the serving flags, Execute with signal handling and the exit code, and
// the run sequence of every serving subcommand.
package command

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/version"
)

// Serving holds the flags every serving subcommand shares: serverkit's
// options and --pprof-address. NewRoot registers them as persistent flags.
type Serving struct {
	Options serverkit.Options
	// PprofAddress serves net/http/pprof on its own listener; empty
	// disables it.
	PprofAddress string
	// ServiceName is the default OpenTelemetry service.name of the
	// traces (OTEL_SERVICE_NAME overrides it); empty means
	// "portcullis-<subcommand>", e.g. portcullis-htpasswd.
	ServiceName string
}

// tracingShutdownTimeout bounds the flush of the last spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// NewRoot returns the root command of a server binary: name, help,
// --version, shell completion, and the serving flags (defaults from
// serverkit.DefaultOptions) as persistent flags for the subcommands to
// run with. Errors and usage are left to Execute.
func NewRoot(name, short, long string) (*cobra.Command, *Serving) {
	s := &Serving{Options: serverkit.DefaultOptions()}
	root := &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	fs := root.PersistentFlags()
	s.Options.AddFlags(fs)
	fs.StringVar(&s.PprofAddress, "pprof-address", "", "HTTP listen address for Go's /debug/pprof profiles (host:port; for profiling, keep it on loopback); empty disables it")
	return root, s
}

// Build makes the server a subcommand serves. opts.Registry is set, so the
// caller's own metrics go where /metrics serves them; ctx ends with the
// command (background work such as watches stops with it).
type Build func(ctx context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error)

// Run is the body of a serving subcommand: validate the serving flags,
// make the logger (on the command's stderr), start tracing when the
// OTEL_* environment asks for it (serverkit.NewTracerProviderFromEnv),
// build the server, serve pprof if asked, and serve until the command's
// context ends; then flush the spans still queued.
func (s *Serving) Run(cmd *cobra.Command, build Build) error {
	if err := s.Options.Validate(); err != nil {
		return err
	}
	logger, err := s.Options.NewLogger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	opts := s.Options
	if opts.Registry == nil {
		opts.Registry = serverkit.NewRegistry()
	}
	ctx := cmd.Context()
	tp, err := serverkit.NewTracerProviderFromEnv(ctx, s.serviceName(cmd))
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if tp != nil {
		serverkit.SetGlobalTracing(tp, logger)
		opts.TracerProvider = tp
		defer func() {
			// The command's context is over by now (SIGTERM): flush on
			// a fresh, bounded one.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				logger.Warn("flushing traces", "error", err)
			}
		}()
		logger.Info("tracing to OTLP", "service", s.serviceName(cmd))
	}
	srv, err := build(ctx, opts, logger)
	if err != nil {
		return err
	}
	if s.PprofAddress != "" {
		stop, err := ServePprof(s.PprofAddress)
		if err != nil {
			return err
		}
		defer stop()
		logger.Info("serving /debug/pprof", "address", s.PprofAddress)
	}
	return srv.Serve(ctx)
}

func (s *Serving) serviceName(cmd *cobra.Command) string {
	if s.ServiceName != "" {
		return s.ServiceName
	}
	return "portcullis-" + cmd.Name()
}

// Execute runs cmd with a context that SIGINT and SIGTERM (Kubernetes)
// cancel, which starts a graceful shutdown. An error is printed as
// "<name>: <error>" on the command's stderr; the result is the process
// exit code.
func Execute(cmd *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, cmd, cmd.ErrOrStderr())
}

func execute(ctx context.Context, cmd *cobra.Command, stderr io.Writer) int {
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.Name(), err)
		return 1
	}
	return 0
}

// Main is a server binary's main: Execute, then exit with its code.
func Main(cmd *cobra.Command) {
	os.Exit(Execute(cmd))
}
