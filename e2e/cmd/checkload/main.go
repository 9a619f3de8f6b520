// Command checkload is a closed-loop load generator for Envoy's ext_authz v3
// Check API: point it at any auth server and it reports requests/s and
// latency percentiles.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/portcullis/portcullis/e2e/loadgen"
	"github.com/portcullis/portcullis/e2e/loadgen/checkload"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "checkload:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var (
		addr, caFile, output, expectS string
		req                           checkload.Request
		cfg                           loadgen.Config
		conns                         int
		headers, contexts             []string
	)
	cmd := &cobra.Command{
		Use:   "checkload",
		Short: "Load an ext_authz (Envoy v3 Check) server and report requests/s, p50, p99 and errors",
		Long: `checkload sends the same Check request the way Envoy would, from a fixed
number of concurrent workers (closed loop: each waits for its answer before
sending again), for a fixed duration, and reports what it measured.

Example: 16 workers for 10 s against a local htpasswd server with a user:

  checkload --address 127.0.0.1:9443 --concurrency 16 --duration 10s \
    --host echo.example.com --header "authorization=Basic $(printf alice:secret | base64)" \
    --expect ok`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			expect, err := checkload.ParseExpect(expectS)
			if err != nil {
				return err
			}
			if req.Headers, err = pairs("--header", headers, true); err != nil {
				return err
			}
			if req.Context, err = pairs("--context", contexts, false); err != nil {
				return err
			}
			cs, err := checkload.Dial(addr, conns, caFile)
			if err != nil {
				return err
			}
			defer checkload.Close(cs)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			r := loadgen.Run(ctx, addr, cfg, checkload.Do(cs, req.Proto(), expect))
			return report(cmd, output, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "address", "127.0.0.1:9443", "auth server gRPC address (host:port)")
	f.StringVar(&caFile, "tls-ca", "", "CA file to verify the server's certificate; plaintext (h2c) when empty")
	f.IntVar(&conns, "connections", 4, "gRPC connections to spread the workers over")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", 16, "concurrent workers, each with one request in flight")
	f.DurationVarP(&cfg.Duration, "duration", "d", 10*time.Second, "measured duration")
	f.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured warm-up before the measured run")
	f.StringVar(&req.Method, "method", "GET", "HTTP method of the checked request")
	f.StringVar(&req.Scheme, "scheme", "https", "scheme of the checked request")
	f.StringVar(&req.Host, "host", "example.com", "host (authority) of the checked request")
	f.StringVar(&req.Path, "path", "/", "path of the checked request")
	f.StringArrayVar(&headers, "header", nil, "request header name=value (repeatable)")
	f.StringArrayVar(&contexts, "context", nil, "context extension key=value (repeatable), as an HTTPProxy authPolicy.context sets")
	f.StringVar(&expectS, "expect", "any", "answers that count as success: any, ok or denied")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func pairs(flag string, items []string, lower bool) (map[string]string, error) {
	m := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want name=value", flag, it)
		}
		if lower {
			k = strings.ToLower(k)
		}
		m[k] = v
	}
	return m, nil
}

func report(cmd *cobra.Command, output string, r loadgen.Result) error {
	out := cmd.OutOrStdout()
	switch output {
	case "json":
		v := map[string]any{
			"address": r.Name, "concurrency": r.Concurrency, "requests": r.Requests, "errors": r.Errors,
			"seconds": r.Elapsed.Seconds(), "rps": r.RPS,
			"p50_ms": ms(r.P50), "p90_ms": ms(r.P90), "p99_ms": ms(r.P99), "max_ms": ms(r.Max),
		}
		if r.FirstError != nil {
			v["first_error"] = r.FirstError.Error()
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
	case "table":
		t := loadgen.NewTable("checkload", r.Name)
		t.Add(r)
		fmt.Fprint(out, t.String())
	default:
		return fmt.Errorf("--output %q: want table or json", output)
	}
	if r.Requests > 0 && r.Errors == r.Requests {
		return fmt.Errorf("every request failed: %v", r.FirstError)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
