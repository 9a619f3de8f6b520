package httpproxy

import (
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRateLimitDescriptors(t *testing.T) {
	entry := func(e contourv1.RateLimitDescriptorEntry) []contourv1.RateLimitDescriptor {
		return []contourv1.RateLimitDescriptor{{Entries: []contourv1.RateLimitDescriptorEntry{e}}}
	}
	for _, tc := range []struct {
		name    string
		in      []contourv1.RateLimitDescriptor
		want    []ir.RateLimitDescriptor
		wantErr string
	}{
		{name: "every kind", in: []contourv1.RateLimitDescriptor{{Entries: []contourv1.RateLimitDescriptorEntry{
			{GenericKey: &contourv1.GenericKeyDescriptor{Key: "k", Value: "v"}},
			{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: "x-user", DescriptorKey: "user"}},
			{RequestHeaderValueMatch: &contourv1.RequestHeaderValueMatchDescriptor{Headers: []contourv1.HeaderMatchCondition{{Name: "x-plan", Exact: "free"}}, ExpectMatch: true, Value: "free"}},
			{RemoteAddress: &contourv1.RemoteAddressDescriptor{}},
		}}}, want: []ir.RateLimitDescriptor{{Entries: []ir.RateLimitEntry{
			{GenericKey: &ir.GenericKeyEntry{Key: "k", Value: "v"}},
			{RequestHeader: &ir.RequestHeaderEntry{Header: "x-user", Key: "user"}},
			{HeaderMatch: &ir.HeaderMatchEntry{Headers: []ir.HeaderMatch{{Name: "x-plan", Kind: "exact", Value: "free"}}, ExpectMatch: true, Value: "free"}},
			{RemoteAddress: true},
		}}}},
		{name: "no entries", in: []contourv1.RateLimitDescriptor{{}}, wantErr: "descriptors[0]: a descriptor needs entries"},
		{name: "no kind", in: entry(contourv1.RateLimitDescriptorEntry{}), wantErr: "exactly one of"},
		{name: "two kinds", in: entry(contourv1.RateLimitDescriptorEntry{GenericKey: &contourv1.GenericKeyDescriptor{Value: "v"}, RemoteAddress: &contourv1.RemoteAddressDescriptor{}}), wantErr: "exactly one of"},
		{name: "generic without value", in: entry(contourv1.RateLimitDescriptorEntry{GenericKey: &contourv1.GenericKeyDescriptor{Key: "k"}}), wantErr: "genericKey.value is required"},
		{name: "header name", in: entry(contourv1.RateLimitDescriptorEntry{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: "a b", DescriptorKey: "k"}}), wantErr: "not a header name"},
		{name: "header key", in: entry(contourv1.RateLimitDescriptorEntry{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: "x"}}), wantErr: "descriptorKey is required"},
		{name: "match without headers", in: entry(contourv1.RateLimitDescriptorEntry{RequestHeaderValueMatch: &contourv1.RequestHeaderValueMatchDescriptor{Value: "v"}}), wantErr: "needs headers and a value"},
		{name: "bad header condition", in: entry(contourv1.RateLimitDescriptorEntry{RequestHeaderValueMatch: &contourv1.RequestHeaderValueMatchDescriptor{
			Headers: []contourv1.HeaderMatchCondition{{Name: "x", Present: true, Exact: "y"}}, Value: "v"}}), wantErr: "headers[0]: header condition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rateLimitDescriptors(tc.in)
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}
