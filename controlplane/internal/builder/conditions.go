package builder

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// mergeConditions appends one condition block to the inherited match:
// prefixes concatenate, headers and query parameters accumulate, a regex
// matches the rest of the path after the inherited prefix. Every match
// field of an entry applies, as in Contour: {prefix: /x, header: ...}
// matches both (taking only the first field set would serve the route to
// requests its header condition excludes), and {prefix, exact} in one
// entry counts as two path matches.
func mergeConditions(parent route, conds []contourv1.MatchCondition, where string, st *status.Object) (route, bool) {
	out := route{Route: ir.Route{PathKind: parent.PathKind, Path: parent.Path, Headers: slices.Clone(parent.Headers), QueryParams: slices.Clone(parent.QueryParams)}}
	pathErr := func(format string, args ...any) (route, bool) {
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": "+fmt.Sprintf(format, args...))
		return out, false
	}
	prefixes, exacts, regexes := 0, 0, 0
	regex := ""
	for _, c := range conds {
		if c.Prefix != "" {
			prefixes++
			if err := pathConditionValid("prefix", c.Prefix); err != nil {
				return pathErr("%v", err)
			}
			out.Path = joinPath(out.Path, c.Prefix)
		}
		if c.Exact != "" {
			exacts++
			if err := pathConditionValid("exact", c.Exact); err != nil {
				return pathErr("%v", err)
			}
			out.Path = joinPath(out.Path, c.Exact)
			out.PathKind = ir.PathExact
		}
		if c.Regex != "" {
			regexes++
			regex = c.Regex
		}
		if c.Header != nil {
			h, err := headerMatch(c.Header)
			if err != nil {
				st.AddError(contourv1.ConditionTypeHeaderConditionsError, status.ReasonHeaderMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Headers = append(out.Headers, h)
		}
		if c.QueryParameter != nil {
			q, err := queryParamMatch(c.QueryParameter)
			if err != nil {
				st.AddError(contourv1.ConditionTypeQueryParameterConditionsError, status.ReasonQueryParameterMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.QueryParams = append(out.QueryParams, q)
		}
	}
	switch {
	case prefixes > 1:
		return pathErr("more than one prefix is not allowed in a condition block")
	case exacts > 1:
		return pathErr("more than one exact is not allowed in a condition block")
	case regexes > 1:
		return pathErr("more than one regex is not allowed in a condition block")
	case prefixes+exacts > 1:
		return pathErr("prefix and exact conditions cannot be combined in a condition block")
	case regexes == 1 && prefixes+exacts > 0:
		return pathErr("a regex condition cannot be combined with a prefix or exact condition in a condition block")
	case exacts+regexes == 1 && parent.PathKind == ir.PathExact:
		return pathErr("cannot add a path condition under an exact match")
	case prefixes+exacts+regexes > 0 && parent.PathKind == ir.PathRegex:
		return pathErr("cannot add a path condition under a regex match")
	case regexes == 1:
		re, err := regexUnder(parent.Path, regex)
		if err != nil {
			return pathErr("regex condition %q: %v", regex, err)
		}
		out.PathKind, out.Path = ir.PathRegex, re
	}
	return out, true
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
	if err := regexValid(re); err != nil {
		return "", err
	}
	return re, nil
}

// noControlBytes refuses line breaks and NUL bytes in a value that reaches
// Envoy: it rejects them in names and paths, and with them the whole route
// configuration, which the HTTP listener's virtual hosts all share.
func noControlBytes(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("%q contains a line break or a NUL byte", v)
	}
	return nil
}

// pathConditionValid refuses what Envoy rejects in a path match: besides
// line breaks and NUL bytes, "?" and "#" (a path never holds them; Envoy
// refuses them in a path-separated prefix, the whole route configuration
// with it); and a path not starting with "/". kind ("prefix" or "exact")
// names the condition in the error.
func pathConditionValid(kind, p string) error {
	if strings.ContainsAny(p, "?#") {
		return fmt.Errorf("%s %q contains \"?\" or \"#\": a path condition cannot match a query or a fragment", kind, p)
	}
	if err := noControlBytes(p); err != nil {
		return fmt.Errorf("%s %v", kind, err)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s conditions must start with /, %s was supplied", kind, p)
	}
	return nil
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

func headerMatch(h *contourv1.HeaderMatchCondition) (ir.HeaderMatch, error) {
	out := ir.HeaderMatch{Name: h.Name, IgnoreCase: h.IgnoreCase, TreatMissingAsEmpty: h.TreatMissingAsEmpty}
	if h.Name == "" {
		return out, fmt.Errorf("header condition must name a header")
	}
	for _, v := range []string{h.Name, h.Contains, h.NotContains, h.Exact, h.NotExact} {
		if err := noControlBytes(v); err != nil {
			return out, fmt.Errorf("header condition on %q: %w", h.Name, err)
		}
	}
	n := 0
	set := func(kind, value string) {
		n++
		out.Kind, out.Value = kind, value
	}
	if h.Present {
		set("present", "")
	}
	if h.NotPresent {
		set("notpresent", "")
	}
	if h.Contains != "" {
		set("contains", h.Contains)
	}
	if h.NotContains != "" {
		set("notcontains", h.NotContains)
	}
	if h.Exact != "" {
		set("exact", h.Exact)
	}
	if h.NotExact != "" {
		set("notexact", h.NotExact)
	}
	if h.Regex != "" {
		set("regex", h.Regex)
	}
	if n != 1 {
		return out, fmt.Errorf("header condition on %q must set exactly one of present, notpresent, contains, notcontains, exact, notexact, regex", h.Name)
	}
	if out.Kind == "regex" {
		if err := regexValid(h.Regex); err != nil {
			return out, fmt.Errorf("header condition on %q: %w", h.Name, err)
		}
	}
	if h.IgnoreCase && !slices.Contains([]string{"exact", "notexact", "contains", "notcontains"}, out.Kind) {
		return out, fmt.Errorf("header condition on %q: ignoreCase applies to exact, notexact, contains and notcontains only, not %s (a regex can start with (?i))", h.Name, out.Kind)
	}
	if h.TreatMissingAsEmpty && out.Kind != "notexact" && out.Kind != "notcontains" {
		return out, fmt.Errorf("header condition on %q: treatMissingAsEmpty applies to notexact and notcontains only, not %s", h.Name, out.Kind)
	}
	return out, nil
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
