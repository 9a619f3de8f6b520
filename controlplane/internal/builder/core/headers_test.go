package core

import (
	"reflect"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestHeadersPolicy(t *testing.T) {
	set := func(name, value string) contourv1.HeaderValue { return contourv1.HeaderValue{Name: name, Value: value} }
	for _, tc := range []struct {
		name    string
		in      *contourv1.HeadersPolicy
		request bool
		want    *ir.HeadersPolicy
		wantErr string
	}{
		{name: "none", in: nil},
		{name: "set and remove", in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("X-A", "1")}, Remove: []string{"X-B"}},
			want: &ir.HeadersPolicy{Set: []ir.HeaderValue{{Name: "X-A", Value: "1"}}, Remove: []string{"X-B"}}},
		{name: "host rewrites the authority of requests", request: true, in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("Host", "a.example.com")}},
			want: &ir.HeadersPolicy{HostRewrite: "a.example.com"}},
		{name: "host on responses", in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("Host", "a")}}, wantErr: `rewriting "Host" header is not supported`},
		{name: "duplicate set, any case", in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("x-a", "1"), set("X-A", "2")}}, wantErr: "duplicate header addition"},
		{name: "invalid name", in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("x a", "1")}}, wantErr: `invalid set header "x a"`},
		{name: "line break in a value", in: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{set("x-a", "1\r\nx-b: 2")}}, wantErr: "line break or a NUL byte"},
		{name: "duplicate removal", in: &contourv1.HeadersPolicy{Remove: []string{"x-a", "X-A"}}, wantErr: "duplicate header removal"},
		{name: "invalid removal", in: &contourv1.HeadersPolicy{Remove: []string{"x:a"}}, wantErr: `invalid remove header "x:a"`},
		{name: "removing host", request: true, in: &contourv1.HeadersPolicy{Remove: []string{"host"}}, wantErr: `removing "host" header is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HeadersPolicy(tc.in, tc.request)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("headersPolicy = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
