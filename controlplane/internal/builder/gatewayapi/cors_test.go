package gatewayapi

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestCORSFilter(t *testing.T) {
	yes := true
	five, hour := 5*time.Second, time.Hour
	for _, tc := range []struct {
		name    string
		in      gwapiv1.HTTPCORSFilter
		want    *ir.CORSPolicy
		wantErr bool
	}{
		{name: "empty: no origin allowed, maxAge 5", want: &ir.CORSPolicy{MaxAge: &five, AnswerUnmatchedPreflights: true}},
		{name: "everything", in: gwapiv1.HTTPCORSFilter{
			AllowOrigins: []gwapiv1.CORSOrigin{"https://www.foo.com"}, AllowCredentials: &yes,
			AllowMethods: []gwapiv1.HTTPMethodWithWildcard{"GET", "OPTIONS"}, AllowHeaders: []gwapiv1.HTTPHeaderName{"x-a"},
			ExposeHeaders: []gwapiv1.HTTPHeaderName{"x-b"}, MaxAge: 3600,
		}, want: &ir.CORSPolicy{
			AllowOrigins: []ir.CORSOrigin{{Value: "https://www.foo.com"}}, AllowCredentials: true,
			AllowMethods: []string{"GET", "OPTIONS"}, AllowHeaders: []string{"x-a"}, ExposeHeaders: []string{"x-b"}, MaxAge: &hour, AnswerUnmatchedPreflights: true,
		}},
		{name: "wildcards", in: gwapiv1.HTTPCORSFilter{AllowOrigins: []gwapiv1.CORSOrigin{"*"}, AllowMethods: []gwapiv1.HTTPMethodWithWildcard{"*"}, AllowHeaders: []gwapiv1.HTTPHeaderName{"*"}},
			want: &ir.CORSPolicy{AllowOrigins: []ir.CORSOrigin{{Value: "*"}}, AllowMethods: []string{"*"}, AllowHeaders: []string{"*"}, MaxAge: &five, AnswerUnmatchedPreflights: true}},
		{name: "an unknown method", in: gwapiv1.HTTPCORSFilter{AllowMethods: []gwapiv1.HTTPMethodWithWildcard{"FETCH"}}, wantErr: true},
		{name: "a wildcard method with others", in: gwapiv1.HTTPCORSFilter{AllowMethods: []gwapiv1.HTTPMethodWithWildcard{"*", "GET"}}, wantErr: true},
		{name: "a wildcard header with others", in: gwapiv1.HTTPCORSFilter{AllowHeaders: []gwapiv1.HTTPHeaderName{"x-a", "*"}}, wantErr: true},
		{name: "a header name with a space", in: gwapiv1.HTTPCORSFilter{ExposeHeaders: []gwapiv1.HTTPHeaderName{"x a"}}, wantErr: true},
		{name: "a negative maxAge", in: gwapiv1.HTTPCORSFilter{MaxAge: -1}, wantErr: true},
		{name: "not an origin", in: gwapiv1.HTTPCORSFilter{AllowOrigins: []gwapiv1.CORSOrigin{"https://a.com/"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cors(&tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := cors(nil); err == nil {
		t.Error("a CORS filter without its configuration is accepted")
	}
}

// An origin with a wildcard host matches one or more labels in its place,
// and nothing else: not another scheme, port or domain.
func TestCORSOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin          string
		wantErr         bool
		matches, misses []string
	}{
		{origin: "https://www.foo.com", matches: []string{"https://www.foo.com"}},
		{origin: "http://a.b:8080", matches: []string{"http://a.b:8080"}},
		{origin: "https://*.bar.com", matches: []string{"https://www.bar.com", "https://a.www.bar.com"},
			misses: []string{"https://bar.com", "http://www.bar.com", "https://www.bar.com.evil.com", "https://www.bar.com:8443", "https://wwwbar.com"}},
		{origin: "https://*.Bar.com", matches: []string{"https://www.bar.com"}},
		{origin: "https://*", matches: []string{"https://a.com", "https://a"}, misses: []string{"http://a.com", "https://a.com:8443"}},
		{origin: "http://*:8080", matches: []string{"http://a.com:8080"}, misses: []string{"http://a.com", "http://a.com:80800"}},
		{origin: "ftp://a.com", wantErr: true},
		{origin: "https://a.*.com", wantErr: true},
		{origin: "https://a.com:0", wantErr: true},
		{origin: "https://a.com:65536", wantErr: true},
		{origin: "https://a.com/path", wantErr: true},
		{origin: "", wantErr: true},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			got, err := corsOrigin(tc.origin)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			match := func(o string) bool { return got.Value == o }
			if got.Regex {
				// Envoy matches the whole origin.
				re := regexp.MustCompile("^(?:" + got.Value + ")$")
				match = re.MatchString
			}
			for _, o := range tc.matches {
				if !match(o) {
					t.Errorf("%+v does not match %q", got, o)
				}
			}
			for _, o := range tc.misses {
				if match(o) {
					t.Errorf("%+v matches %q", got, o)
				}
			}
		})
	}
}
