package oidc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// Each answer's reason (the words of the events and failures metrics)
// and, when allowed, the user (the sub claim), as the access log reads
// them from the dynamic metadata.
func TestDecisionReasons(t *testing.T) {
	now := time.Now()
	srv := newTestServer(t)
	m, err := check.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	w := check.Wrap("oidc", srv, m, slog.New(slog.DiscardHandler))
	expired := aliceSession(now)
	expired.Expiry = now.Add(-time.Second).Unix()
	cookie := sessionCookie(t, srv, aliceSession(now))
	json := map[string]string{"accept": "application/json"}
	for _, tc := range []struct {
		name                   string
		req                    *authv3.CheckRequest
		decision, reason, user string
	}{
		{"session", checkReq("GET", "/x", map[string]string{"cookie": cookie}, nil), "allowed", "session", "alice"},
		{"session without the required group", checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{KeyGroups: "auditors"}), "denied", "forbidden", ""},
		{"API client without credentials", checkReq("GET", "/x", json, nil), "denied", "no_credentials", ""},
		{"API client with an expired session", checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": sessionCookie(t, srv, expired)}, nil), "denied", "session_expired", ""},
		{"API client with a tampered session", checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": cookie + "AA"}, nil), "denied", "session_invalid", ""},
		{"bad route context", checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{"oidc.portcullis.dev/nope": "x"}), "error", "route_context", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := w.Check(context.Background(), tc.req)
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
