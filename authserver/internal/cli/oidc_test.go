package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOIDCHelpExplainsTheBackend(t *testing.T) {
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"oidc", "--help"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--config", "PKCE", "oidc.portcullis.dev/groups", "oidc.portcullis.dev/api",
		"WWW-Authenticate: Bearer", "portcullis_authserver_oidc_events_total", "docs/authserver-oidc.md"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("authserver oidc --help lacks %q", want)
		}
	}
}

func TestOIDCCommandRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("issuer: https://login.example.com\nclientID: c\nclientSecret: inline\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"oidc"}, "--config is required"},
		{[]string{"oidc", "--config", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"oidc", "--config", bad}, "unknown field"},
	} {
		cmd := NewRootCommand()
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.ExecuteContext(ctxT(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
