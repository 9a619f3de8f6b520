package check_test

import (
	"context"
	"errors"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestDecisionOnTheSpan: every way a backend answers leaves the decision
// and its reason on the span the check runs in.
func TestDecisionOnTheSpan(t *testing.T) {
	for _, tc := range []struct {
		name             string
		backend          backendFunc
		decision, reason string
	}{
		{"allow", func(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			return check.Allow(req, nil)
		}, "allow", check.ResultAllowed},
		{"deny with a reason", func(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			check.SetReason(ctx, "bad_credentials")
			return check.Unauthorized(`Basic realm="r"`)
		}, "deny", "bad_credentials"},
		{"redirect", func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			return check.Redirect("https://idp.example/auth")
		}, "deny", check.ResultRedirect},
		{"backend error", func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			return nil, errors.New("boom")
		}, "deny", "backend_error"},
		{"panic", func(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
			panic("boom")
		}, "deny", "panic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := serverkittest.NewSpans(t)
			w, _, _ := newWrapped(t, tc.backend)
			ctx, span := spans.Provider.Tracer("test").Start(context.Background(), "check")
			if _, err := w.Check(ctx, &authv3.CheckRequest{}); err != nil {
				t.Fatal(err)
			}
			span.End()
			sp := spans.Wait(t, "check")
			for key, want := range map[string]string{check.AttrDecision: tc.decision, check.AttrReason: tc.reason} {
				if v, ok := serverkittest.Attr(sp, key); !ok || v.AsString() != want {
					t.Errorf("%s = %q (set %t), want %q", key, v.AsString(), ok, want)
				}
			}
		})
	}
}

// TestSetReasonUntraced: outside a traced check SetReason does nothing
// (and does not panic).
func TestSetReasonUntraced(t *testing.T) {
	check.SetReason(context.Background(), "x")
	w, _, _ := newWrapped(t, func(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
		check.SetReason(ctx, "bad_credentials")
		return check.Allow(req, nil)
	})
	if resp, err := w.Check(context.Background(), &authv3.CheckRequest{}); err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check = %v, %v", resp, err)
	}
}
