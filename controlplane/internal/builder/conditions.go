package builder

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// mergeConditions appends one condition block to the inherited match:
// prefixes concatenate, headers accumulate. Every match field of an entry
// applies, as in Contour: {prefix: /x, header: ...} matches both (taking
// only the first field set would serve the route to requests its header
// condition excludes), and {prefix, exact} in one entry counts as two path
// matches.
func mergeConditions(parent route, conds []contourv1.MatchCondition, where string, st *status.Object) (route, bool) {
	out := route{Route: ir.Route{PathKind: parent.PathKind, Path: parent.Path, Headers: slices.Clone(parent.Headers)}}
	prefixes, exacts := 0, 0
	for _, c := range conds {
		if c.Prefix != "" {
			prefixes++
			if err := pathConditionValid("prefix", c.Prefix); err != nil {
				st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Path = joinPath(out.Path, c.Prefix)
		}
		if c.Exact != "" {
			exacts++
			if err := pathConditionValid("exact", c.Exact); err != nil {
				st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Path = joinPath(out.Path, c.Exact)
			out.PathKind = ir.PathExact
		}
		if c.Header != nil {
			h, err := headerMatch(c.Header)
			if err != nil {
				st.AddError(contourv1.ConditionTypeHeaderConditionsError, status.ReasonHeaderMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Headers = append(out.Headers, h)
		}
	}
	switch {
	case prefixes > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": more than one prefix is not allowed in a condition block")
		return out, false
	case exacts > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": more than one exact is not allowed in a condition block")
		return out, false
	case prefixes+exacts > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": prefix and exact conditions cannot be combined in a condition block")
		return out, false
	case exacts == 1 && parent.PathKind == ir.PathExact:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": cannot add a path condition under an exact match")
		return out, false
	}
	return out, true
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
	out := ir.HeaderMatch{Name: h.Name}
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
	if n != 1 {
		return out, fmt.Errorf("header condition on %q must set exactly one of present, notpresent, contains, notcontains, exact, notexact", h.Name)
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
		values[name+"\x00"+h.Kind+"\x00"+h.Value] = true
	}
	for _, h := range hs {
		name := strings.ToLower(h.Name)
		switch h.Kind {
		case "exact":
			if values[name+"\x00notexact\x00"+h.Value] {
				return fmt.Errorf("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header")
			}
		case "contains":
			if values[name+"\x00notcontains\x00"+h.Value] {
				return fmt.Errorf("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header")
			}
		}
	}
	return nil
}

func conditionsKey(conds []contourv1.MatchCondition) string {
	var parts []string
	for _, c := range conds {
		s := "p=" + c.Prefix + ",e=" + c.Exact
		if h := c.Header; h != nil {
			s += fmt.Sprintf(",h=%s/%v/%v/%s/%s/%s/%s", strings.ToLower(h.Name), h.Present, h.NotPresent, h.Contains, h.NotContains, h.Exact, h.NotExact)
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}
