package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// A control plane that publishes nothing servable is not ready: an
// extension allowed to (mayRemoveAll) drops every listener, the
// configuration is published, and /readyz says why it is not ready; the
// same objects without the extension are ready.
func TestReadyzWhenNothingIsServable(t *testing.T) {
	dropAll := sdktest.Listen(t, &sdk.Server{TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
		return &v1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets()}, nil
	}})
	for _, tc := range []struct {
		name, extensions string
		status           int
		body             string
	}{
		{"no extension", "", http.StatusOK, ""},
		{"every listener dropped", fmt.Sprintf("extensions:\n- {name: drop, address: %s, hooks: [PostTranslateModify], mayRemoveAll: true}\n", dropAll),
			http.StatusServiceUnavailable, "no listener"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := configuredServer(t, tc.extensions)
			s.rebuild(t.Context(), extensionObjects(t, "/a"))
			if v, _ := published(s); v == "" {
				_, st := get(t, s, "/status")
				t.Fatalf("nothing published: %s", st)
			}
			if code, body := get(t, s, "/readyz"); code != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("/readyz: %d %q, want %d %q", code, body, tc.status, tc.body)
			}
		})
	}
}

// configuredServer is a server of the default pipeline with the
// configuration file text (its extensions connected), closed with the
// test.
func configuredServer(t *testing.T, text string) *Server {
	t.Helper()
	c, err := config.Parse([]byte(text), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regs, err := extension.FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	opts := pipeline.DefaultOptions()
	opts.Builder = opts.Builder.WithConfig(c)
	s, err := newServer(Config{Pipeline: opts, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Extensions: regs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ext.close)
	return s
}
