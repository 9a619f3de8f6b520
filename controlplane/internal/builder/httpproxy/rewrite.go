package httpproxy

import (
	"fmt"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routePathRewrite reads the route's pathRewritePolicy: of its
// replacePrefix entries, the one whose prefix is the route's prefix (as
// the include chain renders it) replaces that prefix; else the one
// without a prefix; else the path is not rewritten (an HTTPProxy included
// through several roots can rewrite only some of its prefixes), as in
// Contour. The replacement is on path segments: /api replaced by /v2
// turns /api/x into /v2/x and /api into /v2; replaced by / it turns /api/x
// into /x.
func routePathRewrite(rt *Route, r *contourv1.Route, errs *routeErrors) {
	p := r.PathRewritePolicy
	if p == nil || len(p.ReplacePrefix) == 0 {
		return
	}
	rw, err := replacePrefix(p.ReplacePrefix, rt.PathKind, rt.Path)
	if err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonPathRewritePolicyInvalid, "pathRewritePolicy: %v", err)
		return
	}
	rt.PathRewrite = rw
}

// replacePrefix chooses the replacement for a route matching path (of
// kind); nil when none applies.
func replacePrefix(rs []contourv1.ReplacePrefix, kind ir.PathMatchKind, path string) (*ir.PathRewrite, error) {
	if kind != ir.PathPrefix {
		what := "an exact"
		if kind == ir.PathRegex {
			what = "a regex"
		}
		return nil, fmt.Errorf("replacePrefix replaces the prefix a route matches: it cannot be used with %s path condition", what)
	}
	routePrefix := normalPrefix(path)
	if routePrefix == "" {
		routePrefix = "/"
	}
	seen := map[string]int{}
	var exact, fallback *contourv1.ReplacePrefix
	for i := range rs {
		r := &rs[i]
		if r.Prefix != "" {
			if err := redirectPathValid(fmt.Sprintf("replacePrefix[%d].prefix", i), r.Prefix); err != nil {
				return nil, err
			}
		}
		if err := redirectPathValid(fmt.Sprintf("replacePrefix[%d].replacement", i), r.Replacement); err != nil {
			return nil, err
		}
		key := normalPrefix(r.Prefix)
		if j, dup := seen[key]; dup {
			if r.Prefix == "" {
				return nil, fmt.Errorf("ambiguous prefix replacement: replacePrefix[%d] and replacePrefix[%d] both have no prefix", j, i)
			}
			return nil, fmt.Errorf("duplicate replacement prefix %q in replacePrefix[%d] and replacePrefix[%d]", r.Prefix, j, i)
		}
		seen[key] = i
		switch {
		case r.Prefix == "":
			fallback = r
		case key == routePrefix:
			exact = r
		}
	}
	chosen := exact
	if chosen == nil {
		chosen = fallback
	}
	if chosen == nil {
		return nil, nil
	}
	return &ir.PathRewrite{Prefix: true, Value: chosen.Replacement}, nil
}

// normalPrefix compares prefixes as the route matches them, on segments:
// without trailing slashes, "" (no prefix, in a key) staying "" and the
// root "/". The route's own path "" is the root.
func normalPrefix(p string) string {
	if p == "" {
		return ""
	}
	if t := strings.TrimRight(p, "/"); t != "" {
		return t
	}
	return "/"
}
