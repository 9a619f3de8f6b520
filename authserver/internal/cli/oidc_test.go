package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOIDCCommandRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	insecure := filepath.Join(dir, "insecure.yaml")
	if err := os.WriteFile(insecure, []byte("issuer: http://login.example.com\nclientID: c\ncookie: {keyEnv: X}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
		// Refused at start-up, before any server runs.
		{[]string{"oidc", "--config", insecure}, `issuer "http://login.example.com" is plain http`},
	} {
		if err := execute(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
