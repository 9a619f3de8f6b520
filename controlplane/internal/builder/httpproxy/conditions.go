package httpproxy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// mergeConditions appends one condition block to the inherited match:
// prefixes concatenate, headers and query parameters accumulate, a regex
// matches the rest of the path after the inherited prefix. Every match
// field of an entry applies, as in Contour: {prefix: /x, header: ...}
// matches both (taking only the first field set would serve the route to
// requests its header condition excludes), and {prefix, exact} in one
// entry counts as two path matches. condType is the type of the path
// errors, as Contour's: RouteError for a route's block, IncludeError for
// an include's (header and query parameter errors are RouteErrors for
// both, as Contour's).
func mergeConditions(parent *Route, conds []contourv1.MatchCondition, where, condType string, st *status.Object) (Route, bool) {
	out := Route{Route: ir.Route{PathKind: parent.PathKind, Path: parent.Path, Headers: slices.Clone(parent.Headers), QueryParams: slices.Clone(parent.QueryParams)}}
	var paths pathFields
	for _, c := range conds {
		if bad := addCondition(&out, &paths, c); bad != nil {
			t := condType
			if bad.reason != status.ReasonPathMatchConditionsNotValid {
				// Header and query parameter conditions are RouteErrors
				// on an include too, as Contour's.
				t = contourv1.ConditionTypeRouteError
			}
			st.AddError(t, bad.reason, where+": "+bad.err.Error())
			return out, false
		}
	}
	pathErr := func(format string, args ...any) (Route, bool) {
		st.AddError(condType, status.ReasonPathMatchConditionsNotValid, where+": "+fmt.Sprintf(format, args...))
		return out, false
	}
	if problem := paths.problem(parent.PathKind); problem != "" {
		return pathErr("%s", problem)
	}
	if paths.regexes == 1 {
		re, err := regexUnder(parent.Path, paths.regex)
		if err != nil {
			return pathErr("regex condition %q: %v", paths.regex, err)
		}
		out.PathKind, out.Path = ir.PathRegex, re
	}
	return out, true
}

// pathFields counts the path match fields of a condition block, which
// allows one path match in all; regex is the last regex.
type pathFields struct {
	prefixes, exacts, regexes int
	regex                     string
}

// conditionError is a condition refused, with the status reason that says
// which kind of condition it is.
type conditionError struct {
	reason string
	err    error
}

// addCondition adds one entry of a condition block to out, and its path
// fields to paths; every match field of the entry applies.
func addCondition(out *Route, paths *pathFields, c contourv1.MatchCondition) *conditionError {
	if err := addPathCondition(out, paths, c); err != nil {
		return &conditionError{status.ReasonPathMatchConditionsNotValid, err}
	}
	if c.Header != nil {
		h, err := headerMatch(c.Header)
		if err != nil {
			return &conditionError{status.ReasonHeaderMatchConditionsNotValid, err}
		}
		out.Headers = append(out.Headers, h)
	}
	if c.QueryParameter != nil {
		q, err := queryParamMatch(c.QueryParameter)
		if err != nil {
			return &conditionError{status.ReasonQueryParameterMatchConditionsNotValid, err}
		}
		out.QueryParams = append(out.QueryParams, q)
	}
	return nil
}

// addPathCondition joins an entry's prefix and exact paths to out's and
// counts them and its regex (applied once the block is checked whole).
func addPathCondition(out *Route, paths *pathFields, c contourv1.MatchCondition) error {
	if c.Prefix != "" {
		paths.prefixes++
		if err := core.PathConditionValid("prefix", c.Prefix); err != nil {
			return err
		}
		out.Path = joinPath(out.Path, c.Prefix)
	}
	if c.Exact != "" {
		paths.exacts++
		if err := core.PathConditionValid("exact", c.Exact); err != nil {
			return err
		}
		out.Path = joinPath(out.Path, c.Exact)
		out.PathKind = ir.PathExact
	}
	if c.Regex != "" {
		paths.regexes++
		paths.regex = c.Regex
	}
	return nil
}

// problem says what is wrong with a block's path fields under a parent
// path match of kind parentKind; "" when nothing is.
func (f pathFields) problem(parentKind ir.PathMatchKind) string {
	switch {
	case f.prefixes > 1:
		return "more than one prefix is not allowed in a condition block"
	case f.exacts > 1:
		return "more than one exact is not allowed in a condition block"
	case f.regexes > 1:
		return "more than one regex is not allowed in a condition block"
	case f.prefixes+f.exacts > 1:
		return "prefix and exact conditions cannot be combined in a condition block"
	case f.regexes == 1 && f.prefixes+f.exacts > 0:
		return "a regex condition cannot be combined with a prefix or exact condition in a condition block"
	case f.exacts+f.regexes == 1 && parentKind == ir.PathExact:
		return "cannot add a path condition under an exact match"
	case f.prefixes+f.exacts+f.regexes > 0 && parentKind == ir.PathRegex:
		return "cannot add a path condition under a regex match"
	}
	return ""
}

// regexUnder is the regex path condition re of a route under the
// inherited prefix (the conditions of the includes on the way): the
// prefix, as it is, then re matching the rest of the path. Envoy matches
// the regex against the whole path, so under a prefix re must start with
// "/" (the rest of the path on a segment boundary, as prefixes match).
func regexUnder(prefix, re string) (string, error) {
	prefix = strings.TrimRight(prefix, "/")
	if prefix != "" {
		if !strings.HasPrefix(re, "/") {
			return "", fmt.Errorf("under the prefix %q of the includes, a regex must start with /: it matches the rest of the path", prefix)
		}
		// The group keeps an alternation after the prefix.
		re = regexp.QuoteMeta(prefix) + "(?:" + re + ")"
	}
	if err := core.RegexValid(re); err != nil {
		return "", err
	}
	return re, nil
}

// joinPath appends a condition's path to the inherited prefix without
// doubling the slash between them ("/api" + "/v1" = "/api/v1"; "/api" + "/"
// = "/api").
func joinPath(parent, p string) string {
	switch {
	case parent == "" || parent == "/":
		return p
	case p == "/":
		return parent
	case strings.HasSuffix(parent, "/"):
		return parent + strings.TrimPrefix(p, "/")
	}
	return parent + p
}

// headerMatch checks one header condition: a name and exactly one match
// field; ignoreCase and treatMissingAsEmpty only with the kinds they apply
// to.
func headerMatch(h *contourv1.HeaderMatchCondition) (ir.HeaderMatch, error) {
	out := ir.HeaderMatch{Name: h.Name, IgnoreCase: h.IgnoreCase, TreatMissingAsEmpty: h.TreatMissingAsEmpty}
	if h.Name == "" {
		return out, fmt.Errorf("header condition must name a header")
	}
	for _, v := range []string{h.Name, h.Contains, h.NotContains, h.Exact, h.NotExact} {
		if err := core.NoControlBytes(v); err != nil {
			return out, fmt.Errorf("header condition on %q: %w", h.Name, err)
		}
	}
	f, one := onlyMatchField([]matchField{
		{"present", "", h.Present},
		{"notpresent", "", h.NotPresent},
		{"contains", h.Contains, h.Contains != ""},
		{"notcontains", h.NotContains, h.NotContains != ""},
		{"exact", h.Exact, h.Exact != ""},
		{"notexact", h.NotExact, h.NotExact != ""},
		{"regex", h.Regex, h.Regex != ""},
	})
	out.Kind, out.Value = f.kind, f.value
	if !one {
		return out, fmt.Errorf("header condition on %q must set exactly one of present, notpresent, contains, notcontains, exact, notexact, regex", h.Name)
	}
	return out, headerMatchOptionsValid(h, out.Kind)
}

// headerMatchOptionsValid checks a header condition's regex and that its
// options apply to its kind of match.
func headerMatchOptionsValid(h *contourv1.HeaderMatchCondition, kind string) error {
	if kind == "regex" {
		if err := core.RegexValid(h.Regex); err != nil {
			return fmt.Errorf("header condition on %q: %w", h.Name, err)
		}
	}
	if h.IgnoreCase && !slices.Contains([]string{"exact", "notexact", "contains", "notcontains"}, kind) {
		return fmt.Errorf("header condition on %q: ignoreCase applies to exact, notexact, contains and notcontains only, not %s (a regex can start with (?i))", h.Name, kind)
	}
	if h.TreatMissingAsEmpty && kind != "notexact" && kind != "notcontains" {
		return fmt.Errorf("header condition on %q: treatMissingAsEmpty applies to notexact and notcontains only, not %s", h.Name, kind)
	}
	return nil
}

// matchField is one of the mutually exclusive match fields of a header or
// query parameter condition: its kind, value, and whether it is set.
type matchField struct {
	kind, value string
	set         bool
}

// onlyMatchField is the last of fs that is set (the zero matchField for
// none), and whether it is the only one.
func onlyMatchField(fs []matchField) (matchField, bool) {
	var out matchField
	n := 0
	for _, f := range fs {
		if f.set {
			n++
			out = f
		}
	}
	return out, n == 1
}

func headerConditionsValid(hs []ir.HeaderMatch) error {
	exact := map[string]string{}
	values := map[string]bool{}
	for _, h := range hs {
		name := strings.ToLower(h.Name)
		if h.Kind == "exact" {
			if _, dup := exact[name]; dup {
				return fmt.Errorf("cannot specify duplicate header 'exact match' conditions in the same route")
			}
			exact[name] = h.Value
		}
		values[fmt.Sprintf("%s\x00%s\x00%s\x00%v", name, h.Kind, h.Value, h.IgnoreCase)] = true
	}
	for _, h := range hs {
		name := strings.ToLower(h.Name)
		switch h.Kind {
		case "exact":
			if values[fmt.Sprintf("%s\x00notexact\x00%s\x00%v", name, h.Value, h.IgnoreCase)] {
				return fmt.Errorf("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header")
			}
		case "contains":
			if values[fmt.Sprintf("%s\x00notcontains\x00%s\x00%v", name, h.Value, h.IgnoreCase)] {
				return fmt.Errorf("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header")
			}
		}
	}
	return nil
}

func conditionsKey(conds []contourv1.MatchCondition) string {
	var parts []string
	for _, c := range conds {
		s := "p=" + c.Prefix + ",e=" + c.Exact + ",r=" + c.Regex
		if h := c.Header; h != nil {
			s += fmt.Sprintf(",h=%s/%v/%v/%q/%q/%q/%q/%q/%v/%v", strings.ToLower(h.Name), h.Present, h.NotPresent, h.Contains, h.NotContains, h.Exact, h.NotExact, h.Regex, h.IgnoreCase, h.TreatMissingAsEmpty)
		}
		if q := c.QueryParameter; q != nil {
			s += fmt.Sprintf(",q=%q/%q/%q/%q/%q/%q/%v/%v", q.Name, q.Exact, q.Prefix, q.Suffix, q.Regex, q.Contains, q.IgnoreCase, q.Present)
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}
