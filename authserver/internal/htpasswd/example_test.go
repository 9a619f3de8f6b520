package htpasswd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestExampleUsers keeps examples/htpasswd honest: its Secrets are selected
// for the realms its README names, and the passwords it documents match.
func TestExampleUsers(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples", "htpasswd")
	passwords := map[string]string{"alice": "alice-password", "olga": "olga-password"}
	verify := func(where string, data []byte, wantUsers ...string) {
		p := parse(data, false)
		if len(p.problems) != 0 || len(p.users) != len(wantUsers) {
			t.Fatalf("%s: %d users, problems %v", where, len(p.users), p.problems)
		}
		for i, u := range p.users {
			if u.name != wantUsers[i] || !u.cred.matches(bcrypt.CompareHashAndPassword, passwords[u.name]) {
				t.Errorf("%s: user %s does not match the documented password", where, u.name)
			}
		}
	}
	file, err := os.ReadFile(filepath.Join(dir, "users.htpasswd"))
	if err != nil {
		t.Fatal(err)
	}
	verify("users.htpasswd", file, "alice", "olga")

	raw, err := os.ReadFile(filepath.Join(dir, "secret.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	realms := map[string]string{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var sec corev1.Secret
		if err := yaml.UnmarshalStrict([]byte(doc), &sec); err != nil {
			t.Fatalf("secret.yaml: %v", err)
		}
		sec.Data = map[string][]byte{}
		for k, v := range sec.StringData { // what the API server does
			sec.Data[k] = []byte(v)
		}
		realm, data, ok := selectSecret(&sec)
		if !ok {
			t.Fatalf("secret.yaml: %s is not selected", sec.Name)
		}
		realms[sec.Name] = realm
		verify("secret.yaml "+sec.Name, data, map[string]string{"staff-users": "alice", "ops-users": "olga"}[sec.Name])
	}
	if realms["staff-users"] != "staff" || realms["ops-users"] != "ops" {
		t.Errorf("realms = %v", realms)
	}
}
