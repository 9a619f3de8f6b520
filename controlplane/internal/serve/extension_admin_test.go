package serve

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// get is the status and body of GET path on the admin endpoint.
func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.adminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// /extensions shows what the chain changed in the last build, and its
// failures.
func TestAdminExtensions(t *testing.T) {
	rec := &routeRequests{}
	s := chainServer(t, retryExtension(t, rec), tagExtension(t))
	if code, _ := get(t, s, "/extensions"); code != http.StatusServiceUnavailable {
		t.Errorf("before a build: %d", code)
	}
	s.rebuild(t.Context(), gatewayObjects(t, 3, true))
	code, body := get(t, s, "/extensions")
	for _, w := range []string{
		`changed: virtual host "app.example.com" of RouteConfiguration`,
		"+      numRetries: 3", "+    key: x-tag", "0 failures",
	} {
		if code != http.StatusOK || !strings.Contains(body, w) {
			t.Errorf("/extensions (%d) lacks %q:\n%s", code, w, body)
		}
	}

	rec.mu.Lock()
	rec.fail = true
	rec.mu.Unlock()
	s.rebuild(t.Context(), gatewayObjects(t, 5, true))
	_, body = get(t, s, "/extensions")
	for _, w := range []string{`failed: extension "retry" (failurePolicy Closed) hook PostRouteModify`, "FailedPrecondition", "retries are off", "was not published"} {
		if !strings.Contains(body, w) {
			t.Errorf("/extensions after a failure lacks %q:\n%s", w, body)
		}
	}
}

// Without extensions, /extensions says so.
func TestAdminExtensionsNone(t *testing.T) {
	s, err := newServer(Config{Pipeline: pipeline.DefaultOptions(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, s, "/extensions"); code != http.StatusNotFound || !strings.Contains(body, "no extensions registered") {
		t.Errorf("%d %s", code, body)
	}
}
