package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/spf13/pflag"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/authserver/internal/oidc"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	defaults := htpasswdBackend.defaults()
	for _, tc := range []struct {
		name, file string
		flat       bool
		want       func(*htpasswdConfig) // applied to the defaults
		err        string
	}{
		{name: "settings under the backend's key", file: "htpasswd:\n  realm: staff\n  files: [a, b]\n  cacheTTL: 90s\n",
			want: func(c *htpasswdConfig) {
				c.Realm, c.Files, c.CacheTTL = "staff", []string{"a", "b"}, duration(90*time.Second)
			}},
		{name: "empty settings keep the defaults", file: "htpasswd: {}\n", want: func(*htpasswdConfig) {}},
		{name: "unknown field", file: "htpasswd: {realms: x}\n", err: `unknown field "realms"`},
		{name: "another backend's key", file: "oidc: {issuer: x}\n", err: `want the key "htpasswd"`},
		{name: "two keys", file: "htpasswd: {}\noidc: {}\n", err: "want only the key"},
		{name: "flat without flat", file: "realm: staff\n", err: `want the key "htpasswd"`},
		{name: "flat", file: "realm: staff\n", flat: true, want: func(c *htpasswdConfig) { c.Realm = "staff" }},
		{name: "flat never hides a backend key", file: "oidc: {}\n", flat: true, err: `want the key "htpasswd"`},
		{name: "duration as a number", file: "htpasswd: {cacheTTL: 5}\n", err: "duration"},
		{name: "not a mapping", file: "- a\n", err: "want a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := htpasswdBackend.defaults()
			err := loadConfig(writeFile(t, "c.yaml", tc.file), "htpasswd", tc.flat, &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestOIDCReadsBothFileShapes: the "oidc:" key and the older flat file
// give the same configuration.
func TestOIDCReadsBothFileShapes(t *testing.T) {
	settings := "issuer: https://login.example.com\nclientID: c\n"
	var flat, keyed oidc.Config
	if err := loadConfig(writeFile(t, "flat.yaml", settings), "oidc", true, &flat); err != nil {
		t.Fatal(err)
	}
	if err := loadConfig(writeFile(t, "keyed.yaml", "oidc:\n  "+strings.ReplaceAll(strings.TrimSpace(settings), "\n", "\n  ")+"\n"), "oidc", true, &keyed); err != nil {
		t.Fatal(err)
	}
	if flat.Issuer != "https://login.example.com" || !reflect.DeepEqual(flat, keyed) {
		t.Errorf("flat %+v, keyed %+v", flat, keyed)
	}
}

// TestHtpasswdFromConfigFile serves htpasswd configured by --config alone:
// the file's users and realm are what the server uses.
func TestHtpasswdFromConfigFile(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := writeFile(t, "users", "alice:"+string(hash)+"\n")
	config := writeFile(t, "config.yaml", "htpasswd:\n  realm: staff\n  secrets: \"off\"\n  files: ["+users+"]\n")
	r := start(t, "htpasswd", "--config", config)
	client := authv3.NewAuthorizationClient(dial(t, r.addr, insecure.NewCredentials()))

	creds := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:secret"))
	resp, err := client.Check(ctxT(t), checkRequest(nil, map[string]string{"authorization": creds}))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check with the file's user: %v, %v", resp, err)
	}
	resp, err = client.Check(ctxT(t), checkRequest(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var challenge string
	for _, h := range resp.GetDeniedResponse().GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "WWW-Authenticate") {
			challenge = h.GetHeader().GetValue()
		}
	}
	if !strings.HasPrefix(challenge, `Basic realm="staff"`) {
		t.Errorf("challenge %q, want the file's realm", challenge)
	}
}

func TestConfigRejectsBadUse(t *testing.T) {
	config := writeFile(t, "config.yaml", "htpasswd: {secrets: \"off\"}\n")
	testserverConfig := writeFile(t, "testserver.yaml", "testserver: {}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"htpasswd", "--config", config, "--secrets", "maybe"}, "--secrets must be"}, // the flag wins
		{[]string{"htpasswd", "--config", testserverConfig}, `want the key "htpasswd"`},
		{[]string{"testserver", "--config", config}, `want the key "testserver"`},
		{[]string{"htpasswd", "--config", config}, "no users"},
	} {
		if err := execute(t, append(tc.args, "--address=127.0.0.1:0", "--metrics-address=")...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestFlagsOverrideTheFile: a flag given replaces the file's field, a flag
// not given leaves it, whatever its default.
func TestFlagsOverrideTheFile(t *testing.T) {
	file := writeFile(t, "c.yaml", "htpasswd:\n  realm: staff\n  files: [a]\n  cacheTTL: 90s\n  cacheSize: 7\n")
	for _, tc := range []struct {
		name  string
		flags []string
		want  func(*htpasswdConfig)
	}{
		{"no flags", nil, func(*htpasswdConfig) {}},
		{"a string", []string{"--auth-realm=ops"}, func(c *htpasswdConfig) { c.Realm = "ops" }},
		{"a list is replaced", []string{"--htpasswd-file=b", "--htpasswd-file=c"}, func(c *htpasswdConfig) { c.Files = []string{"b", "c"} }},
		{"a duration", []string{"--cache-ttl=1m"}, func(c *htpasswdConfig) { c.CacheTTL = duration(time.Minute) }},
		{"set to its default", []string{"--cache-size=10000"}, func(c *htpasswdConfig) { c.CacheSize = 10000 }},
		{"a bool", []string{"--strip-authorization"}, func(c *htpasswdConfig) { c.StripAuthorization = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// As the command does: flags bound to the defaults, then parsed.
			fromFlags := htpasswdBackend.defaults()
			fs := pflag.NewFlagSet("htpasswd", pflag.ContinueOnError)
			htpasswdBackend.flags(&fromFlags, fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			got, err := htpasswdBackend.fromFile(file, fromFlags, fs)
			if err != nil {
				t.Fatal(err)
			}
			want := htpasswdBackend.defaults()
			want.Realm, want.Files, want.CacheTTL, want.CacheSize = "staff", []string{"a"}, duration(90*time.Second), 7
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestEveryBackendTakesConfig: the table gives every subcommand --config,
// and every flag of a backend names the configuration field it sets.
func TestEveryBackendTakesConfig(t *testing.T) {
	root := NewRootCommand()
	for _, b := range backends {
		cmd, _, err := root.Find([]string{b.name})
		if err != nil || cmd.Name() != b.name {
			t.Fatalf("no subcommand %q: %v", b.name, err)
		}
		if cmd.Flags().Lookup("config") == nil {
			t.Errorf("%s has no --config", b.name)
		}
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "config" && len(f.Annotations[configField]) != 1 {
				t.Errorf("%s --%s names no configuration field", b.name, f.Name)
			}
		})
	}
	r := start(t, "testserver", "--config", writeFile(t, "t.yaml", "testserver: {}\n"))
	resp, err := authv3.NewAuthorizationClient(dial(t, r.addr, insecure.NewCredentials())).Check(ctxT(t), checkRequest(nil, nil))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("testserver --config: %v, %v", resp, err)
	}
}
