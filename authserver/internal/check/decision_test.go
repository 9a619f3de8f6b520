package check_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// Every answer says its decision in its dynamic metadata, with the
// backend's reason (else the decision) and, only when allowed, the user.
func TestDecisionMetadata(t *testing.T) {
	req := &authv3.CheckRequest{}
	allow := func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
		return check.Allow(req, nil)
	}
	for _, tc := range []struct {
		name    string
		backend backendFunc
		want    map[string]string
	}{
		{"allowed, with reason and user", func(ctx context.Context, r *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			n := check.NoteFrom(ctx)
			n.Reason("password")
			n.User("alice")
			return allow(ctx, r)
		}, map[string]string{"decision": "allowed", "reason": "password", "user": "alice", "backend": "fake"}},
		{"allowed, nothing noted", allow, map[string]string{"decision": "allowed", "reason": "allowed", "backend": "fake"}},
		{"denied: the noted user is not said", func(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			n := check.NoteFrom(ctx)
			n.Reason("bad_credentials")
			n.User("mallory")
			return check.Unauthorized(`Basic realm="r"`)
		}, map[string]string{"decision": "denied", "reason": "bad_credentials", "backend": "fake"}},
		{"redirect", func(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			check.NoteFrom(ctx).Reason("sign_in")
			return check.Redirect("https://idp.example.com/auth")
		}, map[string]string{"decision": "redirect", "reason": "sign_in", "backend": "fake"}},
		{"backend error", func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			return nil, errors.New("boom")
		}, map[string]string{"decision": "error", "reason": "backend_error", "backend": "fake"}},
		{"backend error with its reason", func(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			check.NoteFrom(ctx).Reason("route_context")
			return nil, errors.New("boom")
		}, map[string]string{"decision": "error", "reason": "route_context", "backend": "fake"}},
		{"panic", func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) { panic("boom") },
			map[string]string{"decision": "error", "reason": "panic", "backend": "fake"}},
		{"reason given with SetReason", func(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			check.SetReason(ctx, "bad_credentials")
			return check.Unauthorized(`Basic realm="r"`)
		}, map[string]string{"decision": "denied", "reason": "bad_credentials", "backend": "fake"}},
		{"values made log-safe and bounded", func(ctx context.Context, r *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			n := check.NoteFrom(ctx)
			n.User("eve\n" + `"x":\` + "\u2028" + strings.Repeat("é", 200))
			return allow(ctx, r)
		}, map[string]string{"decision": "allowed", "reason": "allowed", "backend": "fake",
			"user": "eve__x_:__" + strings.Repeat("é", 123)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, _ := newWrapped(t, tc.backend)
			resp, err := srv.Check(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range resp.GetDynamicMetadata().GetFields() {
				got[k] = v.GetStringValue()
			}
			if len(got) != len(tc.want) {
				t.Errorf("metadata %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("metadata %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// A backend called without Wrap (its own tests) notes into nothing.
func TestNoteWithoutWrap(t *testing.T) {
	n := check.NoteFrom(context.Background())
	n.Reason("r")
	n.User("u")
	var none *check.Note
	none.Reason("r") // no panic
	none.User("u")
}
