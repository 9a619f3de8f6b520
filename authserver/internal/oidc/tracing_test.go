package oidc

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/serverkittest"
)

// TestTracing signs in and refreshes through real gRPC checks carrying
// Envoy's traceparent, against the stand-in provider, and expects each
// call to the provider in the check's trace: oidc.code_exchange,
// oidc.jwks_fetch and oidc.refresh under the Check span, each with the
// HTTP client span of its request beneath it; no attribute holds the
// code, a token or the client secret.
func TestTracing(t *testing.T) {
	const code, clientSecret = "the-authorization-code", "the-client-secret"
	op := newStandInOP(t, map[string]any{"sub": "alice", "email": "alice@example.test"})
	spans := serverkittest.NewSpans(t)
	c := Config{Issuer: op.URL, ClientID: "portcullis"}
	c.setDefaults()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	backend, err := New(&Settings{Config: c, ClientSecret: clientSecret, Keys: [][]byte{key(1)}}, logger, prometheus.NewRegistry(),
		WithTracerProvider(spans.Provider))
	if err != nil {
		t.Fatal(err)
	}
	srv := serverkittest.Start(t, serverkittest.Options(), func(opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
		opts.TracerProvider = spans.Provider
		m, err := check.NewMetrics(prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		return serverkit.New(opts, logger, func(g *grpc.Server) {
			authv3.RegisterAuthorizationServer(g, check.Wrap(Name, backend, m, logger))
		})
	})
	client := authv3.NewAuthorizationClient(srv.Conn)
	traced := func(req *authv3.CheckRequest) (*authv3.CheckResponse, trace.SpanContext, tracetest.SpanStub) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx, parent := serverkittest.RemoteParent(ctx)
		resp, err := client.Check(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, parent, spans.WaitIn(t, parent.TraceID(), "envoy.service.auth.v3.Authorization/Check")
	}

	// The callback: discovery, code exchange, then the first JWKS fetch
	// to verify the ID token.
	fs, _ := json.Marshal(flowState{State: "st", Nonce: op.nonce, Verifier: "the-pkce-verifier", Return: "/orig", Expiry: time.Now().Add(time.Minute).Unix()})
	resp, parent, checkSpan := traced(checkReq("GET", "/oauth2/callback?code="+code+"&state=st",
		map[string]string{"cookie": flowCookieFor(backend, "st", fs)}, nil))
	if loc := deniedHeader(resp, "Location"); len(loc) != 1 || loc[0] != "/orig" {
		t.Fatalf("callback answered %v, want a redirect to /orig", resp)
	}
	if checkSpan.Parent.SpanID() != parent.SpanID() {
		t.Errorf("Check span's parent %s, want Envoy's span %s", checkSpan.Parent.SpanID(), parent.SpanID())
	}
	wantAttr(t, checkSpan, check.AttrDecision, "deny")      // a redirect, as Envoy sees it
	wantAttr(t, checkSpan, check.AttrReason, eventCallback) // the access log's reason too
	callbackSpans := spans.In(parent.TraceID())
	wantProviderCall(t, callbackSpans, checkSpan, spanCodeExchange, "POST", op.URL+"/token")
	wantProviderCall(t, callbackSpans, checkSpan, spanJWKSFetch, "GET", op.URL+"/jwks")
	_, cookie := sessionOf(t, backend, resp)

	// The tokens have expired: the next check refreshes (to tokens that
	// outlive the clock's jump).
	op.ttl = 600
	backend.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	resp, parent, checkSpan = traced(checkReq("GET", "/x", map[string]string{"cookie": cookie}, nil))
	if resp.GetOkResponse() == nil {
		t.Fatalf("refresh: %v", resp)
	}
	wantAttr(t, checkSpan, check.AttrDecision, "allow")
	refreshSpans := spans.In(parent.TraceID())
	wantProviderCall(t, refreshSpans, checkSpan, spanRefresh, "POST", op.URL+"/token")

	// A refusal names its failure, as the metrics do.
	_, _, checkSpan = traced(checkReq("GET", "/oauth2/callback?code="+code+"&state=unknown", nil, nil))
	wantAttr(t, checkSpan, check.AttrDecision, "deny")
	wantAttr(t, checkSpan, check.AttrReason, failStateMissing)

	for _, sp := range append(callbackSpans, refreshSpans...) {
		for _, kv := range sp.Attributes {
			v := kv.Value.String()
			for _, secret := range []string{code, clientSecret, "the-pkce-verifier", "rt-", "eyJ", "Basic ", "Bearer "} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s = %q holds %q", sp.Name, kv.Key, v, secret)
				}
			}
		}
	}
}

// wantProviderCall finds the span name, child of parent, and beneath it
// an HTTP client span of method to url.
func wantProviderCall(t *testing.T, spans tracetest.SpanStubs, parent tracetest.SpanStub, name, method, url string) {
	t.Helper()
	var op *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == name {
			op = &spans[i]
		}
	}
	if op == nil {
		t.Errorf("no %s span among %v", name, serverkittest.Names(spans))
		return
	}
	if op.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("%s's parent %s, want %s %s", name, op.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
	}
	for _, sp := range spans {
		if sp.Parent.SpanID() != op.SpanContext.SpanID() {
			continue
		}
		u, _ := serverkittest.Attr(sp, "url.full")
		m, _ := serverkittest.Attr(sp, "http.request.method")
		if sp.SpanKind == trace.SpanKindClient && u.AsString() == url && m.AsString() == method {
			return
		}
		t.Errorf("%s's child %s: kind %v, %s %s; want a client span %s %s", name, sp.Name, sp.SpanKind, m.AsString(), u.AsString(), method, url)
		return
	}
	t.Errorf("%s has no HTTP client span beneath it (spans %v)", name, serverkittest.Names(spans))
}

func wantAttr(t *testing.T, sp tracetest.SpanStub, key, want string) {
	t.Helper()
	if v, ok := serverkittest.Attr(sp, key); !ok || v.AsString() != want {
		t.Errorf("%s %s = %q (set %t), want %q", sp.Name, key, v.AsString(), ok, want)
	}
}
