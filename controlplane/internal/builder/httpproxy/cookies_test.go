package httpproxy

import (
	"reflect"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestCookieRewrites(t *testing.T) {
	yes, no := true, false
	lax, bad := "Lax", "Sometimes"
	for _, tc := range []struct {
		name    string
		in      []contourv1.CookieRewritePolicy
		want    []ir.CookieRewrite
		wantErr string
	}{
		{name: "none"},
		{name: "everything", in: []contourv1.CookieRewritePolicy{
			{Name: "s", PathRewrite: &contourv1.CookiePathRewrite{Value: "/app"}, DomainRewrite: &contourv1.CookieDomainRewrite{Value: "a.example"}, Secure: &yes, SameSite: &lax},
			{Name: "x'y%z", Secure: &no},
		}, want: []ir.CookieRewrite{{Name: "s", Path: "/app", Domain: "a.example", Secure: &yes, SameSite: "Lax"}, {Name: "x'y%z", Secure: &no}}},
		{name: "duplicate", in: []contourv1.CookieRewritePolicy{{Name: "a", Secure: &yes}, {Name: "a", Secure: &no}}, wantErr: "[1]: cookie \"a\" is rewritten twice"},
		{name: "nothing rewritten", in: []contourv1.CookieRewritePolicy{{Name: "a"}}, wantErr: "set at least one"},
		{name: "name", in: []contourv1.CookieRewritePolicy{{Name: "a b", Secure: &yes}}, wantErr: "is not a cookie name"},
		{name: "empty name", in: []contourv1.CookieRewritePolicy{{Secure: &yes}}, wantErr: "is not a cookie name"},
		{name: "path", in: []contourv1.CookieRewritePolicy{{Name: "a", PathRewrite: &contourv1.CookiePathRewrite{Value: "/a;b"}}}, wantErr: "is not a cookie path"},
		{name: "domain", in: []contourv1.CookieRewritePolicy{{Name: "a", DomainRewrite: &contourv1.CookieDomainRewrite{Value: "A.example"}}}, wantErr: "is not a lower-case domain"},
		{name: "same site", in: []contourv1.CookieRewritePolicy{{Name: "a", SameSite: &bad}}, wantErr: "sameSite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cookieRewrites(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMergeCookieRewrites(t *testing.T) {
	yes := true
	route := []ir.CookieRewrite{{Name: "s", Path: "/", SameSite: "Lax"}, {Name: "t", Secure: &yes}}
	if got := mergeCookieRewrites(route, nil); got != nil {
		t.Errorf("a service without rewrites has its own: %+v", got)
	}
	got := mergeCookieRewrites(route, []ir.CookieRewrite{{Name: "s", Path: "/svc", Domain: "d.example"}, {Name: "u", SameSite: "None"}})
	want := []ir.CookieRewrite{{Name: "s", Path: "/svc", Domain: "d.example", SameSite: "Lax"}, {Name: "t", Secure: &yes}, {Name: "u", SameSite: "None"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if route[0].Path != "/" {
		t.Errorf("the route's rewrites changed: %+v", route)
	}
}
