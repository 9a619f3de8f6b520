package authserver

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
	"github.com/portcullis/portcullis/e2e/loadgen/checkload"
)

// Shared set-up for the authserver benchmarks: start a backend, open
// connections, build loadgen.Do functions. A new case is a server started
// with startAuthserver and one loadgen.Run with fixedChecks or
// varyingChecks.

// benchConfig is the load every case runs under (the targets are
// stated at concurrency 16).
var benchConfig = loadgen.Config{Concurrency: 16, Duration: 5 * time.Second, Warmup: time.Second}

// benchServer is a running authserver backend.
type benchServer struct {
	Addr, Metrics string // gRPC and metrics host:port
	conns         []authv3.AuthorizationClient
}

// startAuthserver runs `authserver <subcommand args>` on free loopback
// ports (plaintext gRPC, warn-level logs) and waits until it serves.
func startAuthserver(b *testing.B, name string, env []string, args ...string) *benchServer {
	b.Helper()
	binary := harness.BuildBinary(b, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	s := &benchServer{
		Addr:    fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)),
		Metrics: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)),
	}
	p := harness.NewProcess(b, "authserver-"+name, binary,
		append(args, "--address", s.Addr, "--metrics-address", s.Metrics, "--log-level", "warn")...)
	p.Env = env
	p.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, s.Addr); err != nil {
		b.Fatalf("authserver %s: %v", name, err)
	}
	conns, err := checkload.Dial(s.Addr, 4, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { checkload.Close(conns) })
	for _, c := range conns {
		s.conns = append(s.conns, authv3.NewAuthorizationClient(c))
	}
	return s
}

// fixedChecks sends the same request on every call (what Envoy does for a
// returning client).
func (s *benchServer) fixedChecks(req checkload.Request, expect checkload.Expect) loadgen.Do {
	return s.varyingChecks(func(int, uint64) checkload.Request { return req }, expect)
}

// varyingChecks builds a request per call from the worker and a global
// sequence number, so that no two calls are identical (nothing can be
// shared or cached between them).
func (s *benchServer) varyingChecks(build func(worker int, seq uint64) checkload.Request, expect checkload.Expect) loadgen.Do {
	var seq atomic.Uint64
	return func(ctx context.Context, worker int) error {
		resp, err := s.conns[worker%len(s.conns)].Check(ctx, build(worker, seq.Add(1)).Proto())
		if err != nil {
			return err
		}
		code := codes.Code(resp.GetStatus().GetCode())
		switch {
		case expect == checkload.ExpectOK && code != codes.OK:
			return fmt.Errorf("denied (%s), want allowed", code)
		case expect == checkload.ExpectDenied && code == codes.OK:
			return fmt.Errorf("allowed, want a denial")
		}
		return nil
	}
}

// metric reads one sample (full name with labels, as exposed) from the
// server's /metrics; 0 when absent.
func (s *benchServer) metric(b *testing.B, series string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + s.Metrics + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// benchCase is a named load for alternate.
type benchCase struct {
	Name string
	Do   loadgen.Do
}

// alternate warms every case up once, then runs the cases in turn, rounds
// times, cfg.Duration/rounds each, and returns for each case its round of
// median throughput. On a shared machine the background load changes from
// second to second; alternating short rounds exposes every case to the
// same load, so their ratios mean something.
func alternate(ctx context.Context, cfg loadgen.Config, rounds int, cases ...benchCase) []loadgen.Result {
	round := cfg
	round.Warmup = 0
	round.Duration = cfg.Duration / time.Duration(rounds)
	results := make([][]loadgen.Result, len(cases))
	for _, c := range cases {
		loadgen.Run(ctx, c.Name, loadgen.Config{Concurrency: cfg.Concurrency, Duration: cfg.Warmup}, c.Do)
	}
	for range rounds {
		for i, c := range cases {
			results[i] = append(results[i], loadgen.Run(ctx, c.Name, round, c.Do))
		}
	}
	out := make([]loadgen.Result, len(cases))
	for i, rs := range results {
		slices.SortFunc(rs, func(a, b loadgen.Result) int { return cmp.Compare(a.RPS, b.RPS) })
		out[i] = rs[len(rs)/2]
		for _, r := range rs { // errors of any round count
			out[i].Errors = max(out[i].Errors, r.Errors)
			if out[i].FirstError == nil {
				out[i].FirstError = r.FirstError
			}
		}
	}
	return out
}
