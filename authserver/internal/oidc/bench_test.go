package oidc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkCheckSession is the in-process cost of a check with a valid
// session cookie (decrypt, decode, claims to headers).
func BenchmarkCheckSession(b *testing.B) {
	srv := newTestServer(b)
	sess := aliceSession(time.Now())
	sess.IDToken = strings.Repeat("x", 900) // a realistic raw ID token size
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
