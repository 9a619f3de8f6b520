package serve

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestCountObjects: each object counts once, as invalid (errors), orphaned
// (no errors of its own) or valid; every status of a present kind is a
// series, and a kind that went is no longer one.
func TestCountObjects(t *testing.T) {
	g := newObjectsGauge()
	proxy := func(name string) objects.Ref { return objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: name} }
	bad := &status.Object{Ref: proxy("bad")}
	bad.AddError("Invalid", "Bad", "bad")
	orphanedWithError := &status.Object{Ref: proxy("both"), Orphaned: true}
	orphanedWithError.AddError("Invalid", "Bad", "bad")
	countObjects(g, []*status.Object{
		{Ref: proxy("a")}, {Ref: proxy("b")}, bad, orphanedWithError, {Ref: proxy("orphan"), Orphaned: true},
		{Ref: objects.Ref{Kind: "Gateway", Namespace: "ns", Name: "gw"}},
	})
	for _, c := range []struct {
		kind, status string
		want         float64
	}{
		{"HTTPProxy", objectValid, 2}, {"HTTPProxy", objectInvalid, 2}, {"HTTPProxy", objectOrphaned, 1},
		{"Gateway", objectValid, 1}, {"Gateway", objectInvalid, 0}, {"Gateway", objectOrphaned, 0},
	} {
		if got := testutil.ToFloat64(g.WithLabelValues(c.kind, c.status)); got != c.want {
			t.Errorf("portcullis_objects{kind=%q,status=%q} = %v, want %v", c.kind, c.status, got, c.want)
		}
	}
	countObjects(g, []*status.Object{{Ref: proxy("a")}})
	if n := testutil.CollectAndCount(g); n != len(objectStatuses) {
		t.Errorf("%d series after the Gateway went, want %d (HTTPProxy's only)", n, len(objectStatuses))
	}
}

// TestMetricsEndpointServesMetricsAlone: the endpoint meant for outside
// the Pod has the health metrics, and none of the admin endpoint's pages.
func TestMetricsEndpointServesMetricsAlone(t *testing.T) {
	s, err := newServer(Config{Pipeline: pipeline.DefaultOptions(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.buildErr = "extension hooks failed"
	h := s.metricsHandler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{"portcullis_build_failing 1", "portcullis_xds_clients 0", `portcullis_xds_clients_behind{type="Cluster"} 0`,
		`portcullis_xds_ack_lag_seconds{type="Listener"} 0`, "portcullis_translate_seconds_bucket"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, path := range []string{"/config", "/status", "/extensions", "/readyz"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("%s on the metrics endpoint: %d, want 404", path, code)
		}
	}
}
