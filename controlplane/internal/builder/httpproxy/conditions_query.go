package httpproxy

import (
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// maxQueryParamName is the longest query parameter name Envoy takes (it
// rejects the whole route configuration over it).
const maxQueryParamName = 1024

// queryParamMatch checks one queryParameter condition: a name and exactly
// one of exact, prefix, suffix, regex, contains and present; ignoreCase
// only with the string comparisons (not regex, not present).
func queryParamMatch(q *contourv1.QueryParameterMatchCondition) (ir.QueryParamMatch, error) {
	out := ir.QueryParamMatch{Name: q.Name, IgnoreCase: q.IgnoreCase}
	if q.Name == "" {
		return out, fmt.Errorf("query parameter condition must name a parameter")
	}
	if len(q.Name) > maxQueryParamName {
		return out, fmt.Errorf("query parameter condition: name longer than %d bytes", maxQueryParamName)
	}
	for _, v := range []string{q.Name, q.Exact, q.Prefix, q.Suffix, q.Contains} {
		if err := core.NoControlBytes(v); err != nil {
			return out, fmt.Errorf("query parameter condition on %q: %w", q.Name, err)
		}
	}
	f, one := onlyMatchField([]matchField{
		{"exact", q.Exact, q.Exact != ""},
		{"prefix", q.Prefix, q.Prefix != ""},
		{"suffix", q.Suffix, q.Suffix != ""},
		{"regex", q.Regex, q.Regex != ""},
		{"contains", q.Contains, q.Contains != ""},
		{"present", "", q.Present},
	})
	out.Kind, out.Value = f.kind, f.value
	if !one {
		return out, fmt.Errorf("query parameter condition on %q must set exactly one of exact, prefix, suffix, regex, contains, present", q.Name)
	}
	if out.Kind == "regex" {
		if err := core.RegexValid(q.Regex); err != nil {
			return out, fmt.Errorf("query parameter condition on %q: %w", q.Name, err)
		}
	}
	if q.IgnoreCase && (out.Kind == "regex" || out.Kind == "present") {
		return out, fmt.Errorf("query parameter condition on %q: ignoreCase applies to exact, prefix, suffix and contains only, not %s (a regex can start with (?i))", q.Name, out.Kind)
	}
	return out, nil
}

// queryParamConditionsValid checks a route's query parameter conditions
// together (its own and its includes'): as in Contour, two exact
// conditions on one parameter are refused (with different values the
// route would never match; with the same value one is redundant).
// Parameter names are case-sensitive.
func queryParamConditionsValid(qs []ir.QueryParamMatch) error {
	exact := map[string]bool{}
	for _, q := range qs {
		if q.Kind != "exact" {
			continue
		}
		if exact[q.Name] {
			return fmt.Errorf("cannot specify duplicate query parameter 'exact match' conditions in the same route (%q)", q.Name)
		}
		exact[q.Name] = true
	}
	return nil
}
