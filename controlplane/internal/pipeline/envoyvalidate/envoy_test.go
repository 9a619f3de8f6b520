package envoyvalidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without Envoy the test fails and says how to install it.
func TestEnvoyPath(t *testing.T) {
	root := t.TempDir()
	write := func(path string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "repo", "go.work"), 0o644)
	write(filepath.Join(root, "repo", ".tools", "bin", "envoy"), 0o755)
	write(filepath.Join(root, "plain", "bin", "envoy"), 0o644)
	wd := filepath.Join(root, "repo", "controlplane", "internal")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tools, wd, want, wantErr string
	}{
		{"the repository's .tools", "", wd, filepath.Join(root, "repo", ".tools", "bin", "envoy"), ""},
		{"PORTCULLIS_TOOLS", filepath.Join(root, "repo", ".tools"), root, filepath.Join(root, "repo", ".tools", "bin", "envoy"), ""},
		{"missing", filepath.Join(root, "none"), wd, "", "run `make tools`"},
		{"not executable", filepath.Join(root, "plain"), wd, "", "run `make tools`"},
		{"no repository", "", root, "", "run `make tools`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := envoyPath(tc.tools, tc.wd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
