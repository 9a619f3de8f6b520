package translator

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// TestHCMEncodingIsTheEncoding: each host's HCM, written from the shared
// encoding of its shape, is byte for byte the HCM built and encoded on its
// own; settings that differ in anything Envoy sees never share an
// encoding (every case goes through one chainParts, in turn, twice).
func TestHCMEncodingIsTheEncoding(t *testing.T) {
	sec := 2 * time.Second
	tracing := &ir.Tracing{Cluster: "extension/otel/collector", ServiceName: "envoy", OverallSampling: 50, Timeout: &sec}
	auth := func(cluster string) *ir.ExtAuth {
		return &ir.ExtAuth{Cluster: cluster, Authority: cluster, Timeout: time.Second, Origins: ir.NewOrigins()}
	}
	failOpen := auth("extension/auth/a")
	failOpen.FailOpen = true
	body := auth("extension/auth/a")
	body.WithRequestBody = &ir.BufferSettings{MaxRequestBytes: 1024}
	partial := auth("extension/auth/a")
	partial.WithRequestBody = &ir.BufferSettings{MaxRequestBytes: 1024, AllowPartialMessage: true}
	slow := auth("extension/auth/a")
	slow.Timeout = 5 * time.Second
	other := auth("extension/auth/a")
	other.Authority = "auth.example.com"
	httpAuth := auth("extension/auth/a")
	httpAuth.HTTP = &ir.HTTPAuthService{PathPrefix: "/check"}
	rls := &ir.RateLimitService{Cluster: "extension/rls/rls", Domain: "contour", Timeout: time.Second}
	cases := []hcmSettings{
		{},
		{auth: auth("extension/auth/a")},
		{auth: auth("extension/auth/b")},
		{auth: failOpen}, {auth: body}, {auth: partial}, {auth: slow}, {auth: other},
		{auth: httpAuth},
		{proc: &ir.ExtProc{Cluster: "extension/proc/p"}},
		{xfcc: &ir.ForwardClientCert{Subject: true}},
		{jwt: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.example.com"}}},
		{cookies: true}, {ipFilters: true}, {cors: true}, {rateLimits: true}, {keepHostPort: true},
		{auth: auth("extension/auth/a"), cors: true, rateLimitService: rls},
		{everyHCM: everyHCM{tracing: tracing}},
		{everyHCM: everyHCM{accessLog: &ir.AccessLog{JSON: true}}},
		{auth: auth("extension/auth/a"), everyHCM: everyHCM{tracing: tracing, accessLog: &ir.AccessLog{}}},
	}
	enc := newChainParts()
	for round := range 2 {
		for i, h := range cases {
			for _, name := range []string{"https/host-1.example.com", "https/a-much-longer-host-name.example.com", ""} {
				want := mustAny(hcmMessage(name, name, h))
				got := enc.hcm(name, h).GetTypedConfig()
				if got.TypeUrl != want.TypeUrl || !bytes.Equal(got.Value, want.Value) {
					t.Errorf("round %d, case %d, %q: the written HCM is not the encoding of hcmFilter's\ngot  %x\nwant %x", round, i, name, got.Value, want.Value)
				}
			}
		}
	}
	if len(enc.rest) < 15 {
		t.Errorf("%d shapes encoded, want one per case that shares (15 or more)", len(enc.rest))
	}
}

// TestHCMShapeCoversTheSettings: shapeOf must take, or refuse to share,
// every field of the settings and of an authorization that the HCM is made
// of. A new field fails here until it is one or the other.
func TestHCMShapeCoversTheSettings(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want []string
	}{
		// In the shape: auth (by value), cookies, ipFilters, cors,
		// rateLimits, rateLimitService, everyHCM, keepHostPort. Not
		// shared: proc, routeAuth, routeProc, jwt, xfcc.
		{reflect.TypeFor[hcmSettings](), []string{"auth", "proc", "routeAuth", "routeProc", "cookies", "ipFilters", "cors", "rateLimits", "jwt", "rateLimitService", "xfcc", "everyHCM", "keepHostPort"}},
		// In the shape: all but HTTP (not shared) and Origins (not
		// Envoy's).
		{reflect.TypeFor[ir.ExtAuth](), []string{"Cluster", "Authority", "Timeout", "FailOpen", "WithRequestBody", "HTTP", "Origins"}},
	} {
		var got []string
		for f := range tc.typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v has fields %v; shapeOf knows %v: add the new ones to hcmShape, or to what shapeOf does not share", tc.typ, got, tc.want)
		}
	}
}
