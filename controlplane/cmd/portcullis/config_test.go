package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateConfig runs `portcullis translate --config` as a user would.
func TestTranslateConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("globalExtAuth:\n  extensionService: portcullis-auth/testserver\n  responseTimout: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const example = "../../../examples/global-external-authorization/"
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // in the output
		wantErr string
	}{
		{"example configuration", []string{"--config", example + "portcullis.yaml", "-f", example + "resources"},
			[]string{"envoy.filters.http.ext_authz", "envoy.filters.http.ext_proc", "extension/portcullis-auth/testserver", "extension/portcullis-extproc/headers"}, ""},
		{"no configuration, no global filters", []string{"-f", example + "resources"}, nil, ""},
		{"invalid configuration names file and field", []string{"--config", bad, "-f", example + "resources"}, nil,
			"--config: " + bad + ": globalExtAuth.responseTimout: unknown field"},
		{"missing configuration file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml"), "-f", example + "resources"}, nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(append([]string{"translate", "-o", "json"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if tc.want == nil && strings.Contains(out, "envoy.filters.http.ext_") {
				t.Errorf("global filters installed without a configuration file")
			}
		})
	}
}
