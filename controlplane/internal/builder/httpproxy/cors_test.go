package httpproxy

import (
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestCORSPolicy(t *testing.T) {
	minute, zero := time.Minute, time.Duration(0)
	two := 2 * time.Second
	base := func(origins ...string) contourv1.CORSPolicy {
		return contourv1.CORSPolicy{AllowOrigin: origins, AllowMethods: []contourv1.CORSHeaderValue{"GET"}}
	}
	with := func(p contourv1.CORSPolicy, f func(*contourv1.CORSPolicy)) contourv1.CORSPolicy { f(&p); return p }
	for _, tc := range []struct {
		name    string
		in      contourv1.CORSPolicy
		want    *ir.CORSPolicy
		wantErr string
	}{
		{name: "everything", in: contourv1.CORSPolicy{
			AllowOrigin:         []string{"*", "https://App.example.com", "http://localhost:8080", `https://[a-z]+\.example\.com`},
			AllowMethods:        []contourv1.CORSHeaderValue{"GET", "POST"},
			AllowHeaders:        []contourv1.CORSHeaderValue{"authorization", "x-custom"},
			ExposeHeaders:       []contourv1.CORSHeaderValue{"x-total"},
			MaxAge:              "1m",
			AllowCredentials:    true,
			AllowPrivateNetwork: true,
		}, want: &ir.CORSPolicy{
			AllowOrigins:        []ir.CORSOrigin{{Value: "*"}, {Value: "https://App.example.com"}, {Value: "http://localhost:8080"}, {Value: `https://[a-z]+\.example\.com`, Regex: true}},
			AllowMethods:        []string{"GET", "POST"},
			AllowHeaders:        []string{"authorization", "x-custom"},
			ExposeHeaders:       []string{"x-total"},
			MaxAge:              &minute,
			AllowCredentials:    true,
			AllowPrivateNetwork: true,
		}},
		{name: "max age 0 disables caching", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.MaxAge = "0" }),
			want: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "*"}}, AllowMethods: []string{"GET"}, MaxAge: &zero}},
		{name: "max age rounded to seconds", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.MaxAge = "1500ms" }),
			want: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "*"}}, AllowMethods: []string{"GET"}, MaxAge: &two}},
		{name: "an origin with a path is a regex", in: base("https://a.example.com/x"),
			want: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "https://a.example.com/x", Regex: true}}, AllowMethods: []string{"GET"}}},
		{name: "an IPv6 origin", in: base("http://[::1]:3000"),
			want: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "http://[::1]:3000"}}, AllowMethods: []string{"GET"}}},
		{name: "no origin", in: base(), wantErr: "allowOrigin must list"},
		{name: "empty origin", in: base("*", ""), wantErr: "allowOrigin[1]: an origin cannot be empty"},
		{name: "bad regex", in: base("https://(a"), wantErr: `allowOrigin[0]: "https://(a" is not`},
		{name: "no method", in: contourv1.CORSPolicy{AllowOrigin: []string{"*"}}, wantErr: "allowMethods must list"},
		{name: "bad method", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.AllowMethods = []contourv1.CORSHeaderValue{"GET, POST"} }),
			wantErr: `allowMethods[0]: "GET, POST" is not a method or header name`},
		{name: "bad header", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.AllowHeaders = []contourv1.CORSHeaderValue{"x\r\ny"} }), wantErr: "allowHeaders[0]"},
		{name: "bad expose header", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.ExposeHeaders = []contourv1.CORSHeaderValue{""} }), wantErr: "exposeHeaders[0]"},
		{name: "bad max age", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.MaxAge = "soon" }), wantErr: `maxAge "soon"`},
		{name: "negative max age", in: with(base("*"), func(p *contourv1.CORSPolicy) { p.MaxAge = "-1s" }), wantErr: `maxAge "-1s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := corsPolicy(&tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}
