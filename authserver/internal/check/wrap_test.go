package check_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

type backendFunc func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error)

func (f backendFunc) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	return f(ctx, req)
}

func newWrapped(t *testing.T, f backendFunc) (authv3.AuthorizationServer, *prometheus.Registry, *bytes.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := check.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return check.Wrap("fake", f, m, logger), reg, &logs
}

func count(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "portcullis_authserver_checks_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["backend"] == "fake" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series for result %q", result)
	return 0
}

func TestWrapFailsClosed(t *testing.T) {
	for name, f := range map[string]backendFunc{
		"error": func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			return nil, errors.New("db down")
		},
		"nil response": func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) { return nil, nil },
		"panic":        func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) { panic("bug") },
	} {
		t.Run(name, func(t *testing.T) {
			srv, reg, _ := newWrapped(t, f)
			resp, err := srv.Check(context.Background(), request(nil))
			if err != nil {
				t.Fatalf("Check returned a gRPC error (fail-open risk): %v", err)
			}
			if result, status := check.Classify(resp); result != check.ResultError || status != 500 {
				t.Fatalf("Check = %s %d, want error 500", result, status)
			}
			if got := count(t, reg, check.ResultError); got != 1 {
				t.Errorf("error count = %v", got)
			}
		})
	}
}

func TestWrapCountsAndStartsAtZero(t *testing.T) {
	srv, reg, _ := newWrapped(t, func(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
		return check.Allow(req, nil)
	})
	for _, r := range []string{check.ResultAllowed, check.ResultDenied, check.ResultRedirect, check.ResultError} {
		if got := count(t, reg, r); got != 0 {
			t.Errorf("%s before any call = %v", r, got)
		}
	}
	// The latency histogram too has a series per result before any call.
	if n := testutil.CollectAndCount(reg, "portcullis_authserver_check_duration_seconds"); n != 4 {
		t.Errorf("duration series before any call = %d, want 4", n)
	}
	for range 3 {
		if _, err := srv.Check(context.Background(), request(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(t, reg, check.ResultAllowed); got != 3 {
		t.Errorf("allowed = %v, want 3", got)
	}
	if n := testutil.CollectAndCount(reg, "portcullis_authserver_checks_total"); n != 4 {
		t.Errorf("series = %d, want 4", n)
	}
}

func TestWrapNeverLogsSecrets(t *testing.T) {
	srv, _, logs := newWrapped(t, func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
		return check.Deny(401, "")
	})
	req := request(map[string]string{
		"authorization": "Bearer SECRET-TOKEN",
		"cookie":        "session=SECRET-COOKIE",
	})
	req.Attributes.Request.Http.Path = "/callback?code=SECRET-CODE&state=x"
	if _, err := srv.Check(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, "SECRET") {
		t.Fatalf("log leaks a secret: %s", out)
	}
	for _, want := range []string{`"path":"/callback"`, `"result":"denied"`, `"status":401`, `"method":"GET"`, `"backend":"fake"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s: %s", want, out)
		}
	}
}

func TestWrapMeasuresLatency(t *testing.T) {
	srv, reg, _ := newWrapped(t, func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
		return check.Deny(403, "")
	})
	if _, err := srv.Check(context.Background(), request(nil)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "portcullis_authserver_check_duration_seconds" {
			// One series per result; only the denial's has a sample.
			samples := map[string]uint64{}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" {
						samples[l.GetValue()] = m.GetHistogram().GetSampleCount()
					}
				}
			}
			want := map[string]uint64{check.ResultAllowed: 0, check.ResultDenied: 1, check.ResultRedirect: 0, check.ResultError: 0}
			if !maps.Equal(samples, want) {
				t.Fatalf("samples by result = %v, want %v", samples, want)
			}
			return
		}
	}
	t.Fatal("no portcullis_authserver_check_duration_seconds histogram")
}
