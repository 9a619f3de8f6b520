package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// BenchmarkCheckSession is the in-process cost of a check with a valid
// session cookie (decrypt, decode, claims to headers).
func BenchmarkCheckSession(b *testing.B) {
	srv := newTestServer(b)
	sess := aliceSession(time.Now())
	// As sessions are stored: the raw ID token alone (about 900 bytes),
	// whose claims every check decodes.
	payload, _ := json.Marshal(map[string]any{"iss": "https://login.example.com", "aud": "portcullis", "exp": 1, "iat": 1,
		"nonce": strings.Repeat("n", 43), "sub": sess.Claims["sub"], "email": sess.Claims["email"], "groups": sess.Claims["groups"]})
	sess.IDToken = strings.Repeat("h", 100) + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + strings.Repeat("s", 342)
	sess.Claims = nil
	req := checkReq("GET", "/x", map[string]string{"cookie": sessionCookie(b, srv, sess), "accept": "text/html"}, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := srv.Check(ctx, req)
		if err != nil || resp.GetOkResponse() == nil {
			b.Fatal(resp, err)
		}
	}
}
