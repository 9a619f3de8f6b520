package translator

import (
	"regexp"
	"strings"
	"testing"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// A prefix replacement follows the Gateway API's table of
// ReplacePrefixMatch (segments, never "//", never an empty path), on the
// route's rewrite and on a redirect's, applied as Envoy applies
// regex_rewrite (RE2, every match replaced, the path without its query).
func TestPrefixRewrite(t *testing.T) {
	for _, tc := range []struct{ path, matched, value, want string }{
		{"/foo/bar", "/foo", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo", "/xyz/", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz/", "/xyz/bar"},
		{"/foo", "/foo", "/xyz", "/xyz"},
		{"/foo/", "/foo", "/xyz", "/xyz/"},
		{"/foo/bar", "/foo", "", "/bar"},
		{"/foo/", "/foo", "", "/"},
		{"/foo", "/foo", "", "/"},
		{"/foo/bar", "/foo", "/", "/bar"},
		{"/foo/", "/foo", "/", "/"},
		{"/foo", "/foo", "/", "/"},
		{"/foo/bar/baz", "/foo/bar", "/", "/baz"},
		{"/bar", "/", "/xyz", "/xyz/bar"},
		{"/bar", "/", "/", "/bar"},
		{"/a.b/c", "/a.b", "/x", "/x/c"},
		{"/foo/bar", "/foo", `/x\1`, `/x\1/bar`},
	} {
		r := &ir.Route{Path: tc.matched, PathRewrite: &ir.PathRewrite{Prefix: true, Value: tc.value}, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}
		rd := &ir.Route{Path: tc.matched, Redirect: &ir.Redirect{Path: &ir.PathRewrite{Prefix: true, Value: tc.value}}}
		for what, rw := range map[string]*matcherv3.RegexMatchAndSubstitute{
			"rewrite":  route(r, routeSettings{}).GetRoute().GetRegexRewrite(),
			"redirect": route(rd, routeSettings{}).GetRedirect().GetRegexRewrite(),
		} {
			if got := applyRegexRewrite(t, rw, tc.path); got != tc.want {
				t.Errorf("%s %s, prefix %s replaced by %q: got %s, want %s (%v)", what, tc.path, tc.matched, tc.value, got, tc.want, rw)
			}
		}
	}
}

func TestFullPathRewrite(t *testing.T) {
	for _, tc := range []struct{ path, value, want string }{
		{"/foo/bar", "/xyz", "/xyz"},
		{"/", "/a/b", "/a/b"},
		{"/foo", `/\0`, `/\0`},
	} {
		r := &ir.Route{Path: "/", PathRewrite: &ir.PathRewrite{Value: tc.value}, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}
		if got := applyRegexRewrite(t, route(r, routeSettings{}).GetRoute().GetRegexRewrite(), tc.path); got != tc.want {
			t.Errorf("%s replaced by %s: got %s, want %s", tc.path, tc.value, got, tc.want)
		}
	}
}

// applyRegexRewrite rewrites path as Envoy does (RE2::GlobalReplace: in
// the substitution \N is a group, \\ a backslash).
func applyRegexRewrite(t *testing.T, rw *matcherv3.RegexMatchAndSubstitute, path string) string {
	t.Helper()
	if rw == nil {
		t.Fatal("no regex_rewrite")
	}
	re := regexp.MustCompile(rw.GetPattern().GetRegex())
	var out strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(path, -1) {
		out.WriteString(path[last:m[0]])
		sub := rw.GetSubstitution()
		for i := 0; i < len(sub); i++ {
			if sub[i] != '\\' {
				out.WriteByte(sub[i])
				continue
			}
			i++
			if i == len(sub) {
				t.Fatalf("substitution %q ends with a lone backslash", sub)
			}
			if c := sub[i]; c >= '0' && c <= '9' {
				if g := int(c - '0'); m[2*g] >= 0 {
					out.WriteString(path[m[2*g]:m[2*g+1]])
				}
				continue
			}
			out.WriteByte(sub[i])
		}
		last = m[1]
	}
	out.WriteString(path[last:])
	return out.String()
}
