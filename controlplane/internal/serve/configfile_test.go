package serve

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// A configuration file that would turn global authorization off without
// saying so is not applied: /status shows the error under configFile and
// portcullis_config_file_not_applied{reason="lost_section"} is 1, until
// the file is good again; an explicit disable or a real change is applied
// and clears both.
func TestConfigFileNotAppliedOnStatusAndMetric(t *testing.T) {
	const inForce = "globalExtAuth: {extensionService: ns/auth}\n"
	for _, tc := range []struct {
		name, next string
		// reason is the metric's label at 1 ("" when applied), and the
		// text /status's configFile.error contains.
		reason, status string
	}{
		{name: "empty document", next: "", reason: configLostSection, status: "globalExtAuth in force but missing"},
		{name: "lost section", next: "limits: {maxIncludeDepth: 3}\n", reason: configLostSection, status: "globalExtAuth in force but missing"},
		{name: "globalExtAuth: with nothing under it", next: "globalExtAuth:\n", reason: configLostSection, status: "write globalExtAuth: {disabled: true}"},
		{name: "invalid", next: "globalExtAuth: {extensionService: no-namespace}\n", reason: configInvalid, status: "must be namespace/name"},
		{name: "explicit disable", next: "globalExtAuth: {disabled: true}\n"},
		{name: "real change", next: "globalExtAuth: {extensionService: ns/other}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newServer(Config{Pipeline: pipeline.DefaultOptions(), Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "portcullis.yaml")
			if err := os.WriteFile(path, []byte(tc.next), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			applied := make(chan *config.Config, 10)
			go config.Watch(ctx, path, 5*time.Millisecond, slog.New(slog.DiscardHandler), []byte(inForce),
				func(c *config.Config) { applied <- c }, s.configFileProblem)
			deadline := time.After(10 * time.Second)
			for {
				got := map[string]float64{
					configInvalid:     testutil.ToFloat64(s.metrics.configFile.WithLabelValues(configInvalid)),
					configLostSection: testutil.ToFloat64(s.metrics.configFile.WithLabelValues(configLostSection)),
				}
				errText := statusConfigError(t, s)
				if tc.reason == "" && len(applied) > 0 {
					if got[configInvalid]+got[configLostSection] != 0 || errText != "" {
						t.Errorf("applied, yet metric %v and /status configFile.error %q", got, errText)
					}
					return
				}
				if tc.reason != "" && got[tc.reason] == 1 {
					if !strings.Contains(errText, tc.status) {
						t.Errorf("/status configFile.error = %q, want it to contain %q", errText, tc.status)
					}
					// Several more polls: still not applied.
					time.Sleep(50 * time.Millisecond)
					if len(applied) > 0 {
						t.Fatal("the version was applied")
					}
					// Back to the content in force: the problem clears.
					if err := os.WriteFile(path, []byte(inForce), 0o600); err != nil {
						t.Fatal(err)
					}
					for statusConfigError(t, s) != "" || testutil.ToFloat64(s.metrics.configFile.WithLabelValues(tc.reason)) != 0 {
						select {
						case <-deadline:
							t.Fatal("the problem did not clear once the file was back to the content in force")
						case <-time.After(5 * time.Millisecond):
						}
					}
					return
				}
				select {
				case <-deadline:
					t.Fatalf("neither applied nor reported: metric %v, /status %q", got, errText)
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
}

// statusConfigError is /status's configFile.error.
func statusConfigError(t *testing.T, s *Server) string {
	t.Helper()
	_, body := get(t, s, "/status")
	var st struct {
		ConfigFile struct {
			Error string `json:"error"`
		} `json:"configFile"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status: %v\n%s", err, body)
	}
	return st.ConfigFile.Error
}
