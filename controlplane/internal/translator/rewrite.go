package translator

import (
	"regexp"
	"strings"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// pathRewrite is the regex_rewrite of a path rewrite, for a route that
// matched the path prefix matched (the route's Path). Envoy applies it to
// the path alone: the query string is kept.
func pathRewrite(p *ir.PathRewrite, matched string) *matcherv3.RegexMatchAndSubstitute {
	if p.Prefix {
		return prefixRewrite(matched, p.Value)
	}
	return &matcherv3.RegexMatchAndSubstitute{Pattern: regex(`^/.*$`), Substitution: literalSubstitution(p.Value)}
}

// prefixRewrite replaces a matched prefix the way the Gateway API says,
// on path segments: /foo replaced by /xyz (or /xyz/) turns /foo/bar into
// /xyz/bar and /foo into /xyz; replaced by / (or nothing) it turns
// /foo/bar into /bar and /foo into /. Envoy's prefix_rewrite replaces the
// characters matched, which gives //bar, /xyz//bar or an empty path, so
// the prefix and the replacement are taken without their trailing
// slashes and the rest of the path keeps its own leading one.
func prefixRewrite(matched, value string) *matcherv3.RegexMatchAndSubstitute {
	prefix := "^" + regexp.QuoteMeta(strings.TrimRight(matched, "/"))
	value = strings.TrimRight(value, "/")
	if value == "" {
		// The slashes after the prefix go with it: one / stays.
		return &matcherv3.RegexMatchAndSubstitute{Pattern: regex(prefix + "/*"), Substitution: "/"}
	}
	return &matcherv3.RegexMatchAndSubstitute{Pattern: regex(prefix + "(/.*)?$"), Substitution: literalSubstitution(value) + `\1`}
}

// literalSubstitution escapes the one character RE2 rewrites read
// specially, so that the value is written as it is.
func literalSubstitution(s string) string { return strings.ReplaceAll(s, `\`, `\\`) }
