package gatewayapi

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
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
		out = append(out, b.rule(func() []gwIRRoute {
			where := ruleWhere(i, rule.Name)
			action, ok := b.httpAction(rule, where)
			return ruleRoutes(b, i, rule.Name, where, action, ok, rule.Matches, httpMatch)
		})...)
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
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.timeouts: %v", where, err)
			ok = false
		}
		x.ResponseTimeout, x.PerTryTimeout = req, backend
	}
	if rule.SessionPersistence != nil {
		// Ignoring it would spread a client's requests across endpoints
		// that expect to hold its session.
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.sessionPersistence is not supported: the rule answers 500", where)
		ok = false
	}
	if rule.Retry != nil {
		r, err := ruleRetry(rule.Retry, x.PerTryTimeout)
		if err != nil {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.retry: %v: the rule answers 500", where, err)
			ok = false
		}
		x.Retry = r
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
	x.Websocket = b.webSocketUpgrades(clusters)
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
	if err := core.NoControlBytes(value); err != nil {
		return out, fmt.Errorf("%q: value %w", name, err)
	}
	switch typ {
	case "Exact":
		out.Kind = "exact"
	case "RegularExpression":
		out.Kind = "regex"
		if err := core.RegexValid(value); err != nil {
			return out, fmt.Errorf("%q: %w", name, err)
		}
	default:
		return out, fmt.Errorf("%q: match type %q is not supported", name, typ)
	}
	return out, nil
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
		return ir.PathExact, value, core.PathConditionValid("exact", value)
	case gwapiv1.PathMatchPathPrefix:
		// The API matches a prefix element-wise and ignores a trailing
		// slash ("/abc/" matches "/abc"), as the IR's prefix does.
		err := core.PathConditionValid("prefix", value)
		if value != "/" {
			value = strings.TrimRight(value, "/")
		}
		return ir.PathPrefix, value, err
	case gwapiv1.PathMatchRegularExpression:
		return ir.PathRegex, value, core.RegexValid(value)
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
