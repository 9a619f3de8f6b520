package htpasswd

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestTracing sends real gRPC checks carrying Envoy's traceparent and
// expects, in that trace: the Check span with the decision, and beneath
// it htpasswd.verify with the cache outcome and the user only when it
// matched; never the password or the Authorization header.
func TestTracing(t *testing.T) {
	spans := serverkittest.NewSpans(t)
	s, _, _ := newServer(t, Options{TracerProvider: spans.Provider}, "alice:"+bcryptHash(t, "s3cret-pw", bcrypt.MinCost))
	srv := serverkittest.Start(t, serverkittest.Options(), func(opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
		opts.TracerProvider = spans.Provider
		m, err := check.NewMetrics(prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		return serverkit.New(opts, logger, func(g *grpc.Server) {
			authv3.RegisterAuthorizationServer(g, check.Wrap(Name, s, m, logger))
		})
	})
	client := authv3.NewAuthorizationClient(srv.Conn)

	for _, tc := range []struct {
		name          string
		authorization string
		verified      bool   // an htpasswd.verify span
		hit           bool   // its portcullis.cache.hit
		user          string // its enduser.id, "" for none
		decision      string
		reason        string
	}{
		{"first sign-in: cache miss", basic("alice", "s3cret-pw"), true, false, "alice", "allow", ReasonPassword},
		{"again: cache hit", basic("alice", "s3cret-pw"), true, true, "alice", "allow", ReasonPassword},
		{"wrong password: no user", basic("alice", "wrong-pw"), true, false, "", "deny", "bad_credentials"},
		{"unknown user: no user", basic("mallory", "s3cret-pw"), true, false, "", "deny", "bad_credentials"},
		{"no credentials: nothing to verify", "", false, false, "", "deny", "no_credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx, parent := serverkittest.RemoteParent(ctx)
			if _, err := client.Check(ctx, checkReq(tc.authorization, nil, nil)); err != nil {
				t.Fatal(err)
			}
			tid := parent.TraceID()
			checkSpan := spans.WaitIn(t, tid, "envoy.service.auth.v3.Authorization/Check")
			if checkSpan.Parent.SpanID() != parent.SpanID() {
				t.Errorf("Check span's parent %s, want Envoy's span %s", checkSpan.Parent.SpanID(), parent.SpanID())
			}
			wantAttr(t, checkSpan, check.AttrDecision, tc.decision)
			wantAttr(t, checkSpan, check.AttrReason, tc.reason)

			var verify *tracetest.SpanStub
			for _, sp := range spans.In(tid) {
				if sp.Name == "htpasswd.verify" {
					verify = &sp
				}
				for _, kv := range sp.Attributes {
					if v := kv.Value.String(); strings.Contains(v, "pw") || strings.Contains(v, "Basic") {
						t.Errorf("span %s attribute %s = %q carries the credentials", sp.Name, kv.Key, v)
					}
				}
			}
			if (verify != nil) != tc.verified {
				t.Fatalf("htpasswd.verify span present %t, want %t (spans %v)", verify != nil, tc.verified, serverkittest.Names(spans.In(tid)))
			}
			if verify == nil {
				return
			}
			if verify.Parent.SpanID() != checkSpan.SpanContext.SpanID() {
				t.Errorf("htpasswd.verify's parent %s, want the Check span %s", verify.Parent.SpanID(), checkSpan.SpanContext.SpanID())
			}
			if hit, ok := serverkittest.Attr(*verify, "portcullis.cache.hit"); !ok || hit.AsBool() != tc.hit {
				t.Errorf("portcullis.cache.hit = %v (set %t), want %t", hit.AsBool(), ok, tc.hit)
			}
			user, ok := serverkittest.Attr(*verify, "enduser.id")
			if tc.user == "" && ok {
				t.Errorf("enduser.id = %q on a failed verification, want none", user.AsString())
			}
			if tc.user != "" && user.AsString() != tc.user {
				t.Errorf("enduser.id = %q, want %q", user.AsString(), tc.user)
			}
		})
	}
}

// TestNoTracerNoSpans: without a provider, htpasswd records nothing even
// inside a traced call (the provider is the only switch).
func TestNoTracerNoSpans(t *testing.T) {
	spans := serverkittest.NewSpans(t)
	s, _, _ := newServer(t, Options{}, "alice:"+bcryptHash(t, "s3cret-pw", bcrypt.MinCost))
	ctx, outer := spans.Provider.Tracer("test").Start(context.Background(), "outer")
	if _, err := s.Check(ctx, checkReq(basic("alice", "s3cret-pw"), nil, nil)); err != nil {
		t.Fatal(err)
	}
	outer.End()
	if got := serverkittest.Names(spans.All()); len(got) != 1 {
		t.Errorf("spans %v, want only the test's own", got)
	}
}

func wantAttr(t *testing.T, sp tracetest.SpanStub, key, want string) {
	t.Helper()
	if v, ok := serverkittest.Attr(sp, key); !ok || v.AsString() != want {
		t.Errorf("%s %s = %q (set %t), want %q", sp.Name, key, v.AsString(), ok, want)
	}
}
