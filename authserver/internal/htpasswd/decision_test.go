package htpasswd

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// Each answer's reason and user, as the access log reads them from the
// dynamic metadata (check.Wrap sets it from what Check notes).
func TestDecisionReasons(t *testing.T) {
	s, _, _ := newServer(t, Options{Realm: "staff"}, "alice:"+bcryptHash(t, "secret", bcrypt.MinCost)+"\n")
	m, err := check.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	w := check.Wrap(Name, s, m, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name, authorization string
		ext                 map[string]string
		decision, reason    string
		user                string
	}{
		{"no credentials", "", nil, "denied", "no_credentials", ""},
		{"not Basic", "Bearer abc", nil, "denied", "no_credentials", ""},
		{"wrong password", basic("alice", "Secret"), nil, "denied", "bad_credentials", ""},
		{"unknown user", basic("mallory", "secret"), nil, "denied", "bad_credentials", ""},
		{"right password", basic("alice", "secret"), nil, "allowed", "password", "alice"},
		{"bad route context", basic("alice", "secret"), map[string]string{KeyPrefix + "nope": "x"}, "error", "route_context", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := w.Check(context.Background(), checkReq(tc.authorization, tc.ext, nil))
			if err != nil {
				t.Fatal(err)
			}
			f := resp.GetDynamicMetadata().GetFields()
			if d, r, u := f["decision"].GetStringValue(), f["reason"].GetStringValue(), f["user"].GetStringValue(); d != tc.decision || r != tc.reason || u != tc.user {
				t.Errorf("decision, reason, user = %q, %q, %q; want %q, %q, %q", d, r, u, tc.decision, tc.reason, tc.user)
			}
		})
	}
}
