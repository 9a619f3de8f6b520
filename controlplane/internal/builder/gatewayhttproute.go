package builder

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildHTTPRoute builds one HTTPRoute (gatewayroute.go).
func (g *gatewayStage) buildHTTPRoute(r *gwapiv1.HTTPRoute) {
	rt := &gwRoute{
		ref:  objects.Ref{Kind: objects.KindHTTPRoute, Namespace: r.Namespace, Name: r.Name},
		kind: kindHTTPRoute, obj: r, parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames,
	}
	g.buildRoute(rt, func(b *routeBuild) []gwIRRoute { return b.httpRules(r) })
}

// httpRules builds the IR routes of an HTTPRoute (ruleRoutes).
func (b *routeBuild) httpRules(r *gwapiv1.HTTPRoute) []gwIRRoute {
	var out []gwIRRoute
	for i, rule := range r.Spec.Rules {
		where := ruleWhere(i, rule.Name)
		action, ok := b.httpAction(rule, where)
		out = append(out, ruleRoutes(b, i, rule.Name, where, action, ok, rule.Matches, httpMatch)...)
	}
	return out
}

// needsPrefixMatch: the route replaces the prefix it matched.
func needsPrefixMatch(x ir.Route) bool {
	return x.PathRewrite != nil && x.PathRewrite.Prefix || x.Redirect != nil && x.Redirect.Path != nil && x.Redirect.Path.Prefix
}

// httpAction is what a rule does, whatever it matches: its filters, its
// timeouts and its backends (a redirect has none); false when it cannot be
// honoured.
func (b *routeBuild) httpAction(rule gwapiv1.HTTPRouteRule, where string) (ir.Route, bool) {
	x := b.newRoute()
	ok := b.filters(rule.Filters, where+".filters", &x)
	if t := rule.Timeouts; t != nil {
		req, backend, err := gatewayTimeouts(t)
		if err != nil {
			b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.timeouts: %v", where, err)
			ok = false
		}
		x.ResponseTimeout, x.PerTryTimeout = req, backend
	}
	if rule.SessionPersistence != nil {
		// Ignoring it would spread a client's requests across endpoints
		// that expect to hold its session.
		b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.sessionPersistence is not supported: the rule answers 500", where)
		ok = false
	}
	if rule.Retry != nil {
		// Ignoring it would fail requests the owner expects retried.
		b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.retry is not supported: the rule answers 500", where)
		ok = false
	}
	if x.Redirect != nil {
		return x, ok
	}
	refs := make([]weightedRef, len(rule.BackendRefs))
	for i, br := range rule.BackendRefs {
		w := fmt.Sprintf("%s.backendRefs[%d]", where, i)
		refs[i] = weightedRef{ref: br.BackendRef, where: w}
		refs[i].reqH, refs[i].respH, refs[i].ok = b.backendFilters(br.Filters, w+".filters")
	}
	clusters, served := b.weightedBackends(refs, where)
	x.Clusters = clusters
	return x, ok && served
}

// httpMatch is one HTTPRouteMatch as an IR route's match, with the CRD's
// defaults (path: PathPrefix "/"; header and query matches: Exact).
func httpMatch(m gwapiv1.HTTPRouteMatch) (ir.Route, error) {
	var x ir.Route
	var err error
	if x.PathKind, x.Path, err = httpPathMatch(m.Path); err != nil {
		return x, fmt.Errorf("path: %w", err)
	}
	seen := map[string]bool{}
	for i, h := range m.Headers {
		// Of several matches of one header, the API uses the first.
		key := strings.ToLower(string(h.Name))
		if seen[key] {
			continue
		}
		seen[key] = true
		hm, err := valueMatch(string(orDefault(h.Type, gwapiv1.HeaderMatchExact)), string(h.Name), h.Value)
		if err != nil {
			return x, fmt.Errorf("headers[%d]: %w", i, err)
		}
		x.Headers = append(x.Headers, ir.HeaderMatch{Name: hm.Name, Kind: hm.Kind, Value: hm.Value})
	}
	seen = map[string]bool{}
	for i, q := range m.QueryParams {
		if seen[string(q.Name)] {
			continue
		}
		seen[string(q.Name)] = true
		qm, err := valueMatch(string(orDefault(q.Type, gwapiv1.QueryParamMatchExact)), string(q.Name), q.Value)
		if err != nil {
			return x, fmt.Errorf("queryParams[%d]: %w", i, err)
		}
		x.QueryParams = append(x.QueryParams, ir.QueryParamMatch{Name: qm.Name, Kind: qm.Kind, Value: qm.Value})
	}
	if m.Method != nil {
		if !slices.Contains(httpMethods, *m.Method) {
			return x, fmt.Errorf("method %q is not one of %v", *m.Method, httpMethods)
		}
		x.Headers = append(x.Headers, ir.HeaderMatch{Name: methodHeader, Kind: "exact", Value: string(*m.Method)})
	}
	return x, nil
}

// methodHeader is the pseudo-header a method match is on.
const methodHeader = ":method"

var httpMethods = []gwapiv1.HTTPMethod{
	gwapiv1.HTTPMethodGet, gwapiv1.HTTPMethodHead, gwapiv1.HTTPMethodPost, gwapiv1.HTTPMethodPut, gwapiv1.HTTPMethodDelete,
	gwapiv1.HTTPMethodConnect, gwapiv1.HTTPMethodOptions, gwapiv1.HTTPMethodTrace, gwapiv1.HTTPMethodPatch,
}

// nameValueMatch is a header or query parameter match (their IR types
// share this shape).
type nameValueMatch struct{ Name, Kind, Value string }

// valueMatch checks an Exact or RegularExpression match of a header or
// query parameter.
func valueMatch(typ, name, value string) (nameValueMatch, error) {
	out := nameValueMatch{Name: name, Value: value}
	if msgs := validation.IsHTTPHeaderName(name); len(msgs) > 0 {
		return out, fmt.Errorf("name %q: %s", name, strings.Join(msgs, "; "))
	}
	if err := noControlBytes(value); err != nil {
		return out, fmt.Errorf("%q: value %w", name, err)
	}
	switch typ {
	case "Exact":
		out.Kind = "exact"
	case "RegularExpression":
		out.Kind = "regex"
		if err := regexValid(value); err != nil {
			return out, fmt.Errorf("%q: %w", name, err)
		}
	default:
		return out, fmt.Errorf("%q: match type %q is not supported", name, typ)
	}
	return out, nil
}

// regexValid checks a regular expression Envoy will run (RE2, which Go's
// regexp implements), and that Envoy takes it: one it refuses makes it
// reject the whole route configuration, every host of the listener with
// it (docs/gateway-api.md).
func regexValid(re string) error {
	if err := noControlBytes(re); err != nil {
		return fmt.Errorf("regular expression %w", err)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	if n := regexProgramSize(parsed) + regexProgramOverhead; n > envoyRegexMaxProgramSize {
		return fmt.Errorf("regular expression %q is too large for Envoy: its RE2 program may have %d instructions, more than %d (write a shorter one, or several matches)", re, n, envoyRegexMaxProgramSize)
	}
	return nil
}

// envoyRegexMaxProgramSize is the largest RE2 program Envoy accepts (its
// runtime key re2.max_program_size.error_level, 100 by default);
// regexProgramOverhead the instructions every program has besides its
// expression's.
const (
	envoyRegexMaxProgramSize = 100
	regexProgramOverhead     = 4
)

// regexProgramSize estimates from above the instructions of the RE2
// program of re, as Envoy counts them (RE2's compiler is not Go's: Go's
// program sizes are not RE2's). A byte of a literal or a range of a class
// is one instruction; a class's range beyond Latin-1 is counted as two per
// UTF-8 byte, which is more than RE2 takes; repetitions are copies, as RE2
// compiles them. The result saturates, so that nested repetitions cannot
// overflow it.
func regexProgramSize(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return literalProgramSize(re.Rune)
	case syntax.OpCharClass:
		return charClassProgramSize(re.Rune)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 2
	case syntax.OpCapture:
		return saturatingSum(2, subProgramSize(re))
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return saturatingSum(1, subProgramSize(re))
	case syntax.OpRepeat:
		return repeatProgramSize(re)
	case syntax.OpConcat:
		return subProgramSize(re)
	case syntax.OpAlternate:
		return saturatingSum(subProgramSize(re), len(re.Sub)-1)
	}
	// The empty-width assertions, an empty or impossible match.
	return 1
}

// programSizeCeiling is where regexProgramSize saturates.
const programSizeCeiling = 1 << 20

// saturatingSum is the sum of n, at most programSizeCeiling.
func saturatingSum(n ...int) int {
	t := 0
	for _, v := range n {
		t = min(t+v, programSizeCeiling)
	}
	return t
}

// saturatingTimes is n*k, at most programSizeCeiling.
func saturatingTimes(n, k int) int {
	if k > 0 && n > programSizeCeiling/k {
		return programSizeCeiling
	}
	return n * k
}

// subProgramSize is the size of re's subexpressions.
func subProgramSize(re *syntax.Regexp) int {
	t := 0
	for _, s := range re.Sub {
		t = saturatingSum(t, regexProgramSize(s))
	}
	return t
}

// literalProgramSize is a literal's size: one instruction per UTF-8 byte.
func literalProgramSize(runes []rune) int {
	n := 0
	for _, r := range runes {
		n += max(utf8.RuneLen(r), 1)
	}
	return n
}

// charClassProgramSize is a class's size (ranges, lo-hi pairs): one
// instruction per Latin-1 range, two per UTF-8 byte beyond.
func charClassProgramSize(ranges []rune) int {
	n := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		switch {
		case hi < 0x100, lo < 0x100 && hi == unicode.MaxRune:
			n++
		default:
			n += 2 * max(utf8.RuneLen(hi), 1)
		}
	}
	return max(n, 1)
}

// repeatProgramSize is a repetition's size: x{n,} is n copies and a
// star; x{n,m} is m copies, m-n of them optional.
func repeatProgramSize(re *syntax.Regexp) int {
	sub := subProgramSize(re)
	if re.Max < 0 {
		return saturatingSum(saturatingTimes(sub, re.Min), sub, 1)
	}
	return saturatingSum(saturatingTimes(sub, re.Max), re.Max-re.Min)
}

// httpPathMatch is the path match of an HTTPRouteMatch (PathPrefix "/"
// when unset).
func httpPathMatch(p *gwapiv1.HTTPPathMatch) (ir.PathMatchKind, string, error) {
	typ, value := gwapiv1.PathMatchPathPrefix, "/"
	if p != nil {
		typ = orDefault(p.Type, gwapiv1.PathMatchPathPrefix)
		if p.Value != nil {
			value = *p.Value
		}
	}
	switch typ {
	case gwapiv1.PathMatchExact:
		return ir.PathExact, value, pathConditionValid("exact", value)
	case gwapiv1.PathMatchPathPrefix:
		// The API matches a prefix element-wise and ignores a trailing
		// slash ("/abc/" matches "/abc"), as the IR's prefix does.
		err := pathConditionValid("prefix", value)
		if value != "/" {
			value = strings.TrimRight(value, "/")
		}
		return ir.PathPrefix, value, err
	case gwapiv1.PathMatchRegularExpression:
		return ir.PathRegex, value, regexValid(value)
	}
	return 0, "", fmt.Errorf("path match type %q is not supported", typ)
}

// durationPattern is the Gateway API's duration format (GEP-2257).
var durationPattern = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// gatewayDuration parses a Gateway API duration; 0 means no timeout.
func gatewayDuration(d gwapiv1.Duration) (time.Duration, error) {
	if !durationPattern.MatchString(string(d)) {
		return 0, fmt.Errorf("%q is not a duration (e.g. 10s, 1m30s, 500ms)", d)
	}
	return time.ParseDuration(string(d))
}

// gatewayTimeouts reads a rule's timeouts: request bounds the whole
// request (the route's timeout), backendRequest each request to a backend
// (each try); nil when unset.
func gatewayTimeouts(t *gwapiv1.HTTPRouteTimeouts) (request, backend *time.Duration, err error) {
	var errs []error
	if t.Request != nil {
		d, err := gatewayDuration(*t.Request)
		errs = append(errs, err)
		request = &d
	}
	if t.BackendRequest != nil {
		d, err := gatewayDuration(*t.BackendRequest)
		errs = append(errs, err)
		backend = &d
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if request != nil && backend != nil && *request != 0 && (*backend == 0 || *backend > *request) {
		return nil, nil, fmt.Errorf("backendRequest (%v) must not be longer than request (%v)", *t.BackendRequest, *t.Request)
	}
	return request, backend, nil
}
