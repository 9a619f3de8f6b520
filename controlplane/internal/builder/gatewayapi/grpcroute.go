package gatewayapi

import (
	"fmt"
	"regexp"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildGRPCRoute builds one GRPCRoute (gatewayroute.go): gRPC is HTTP/2
// with the method in the path, /<service>/<method>, so its rules become
// path matches, and its backends are spoken to in h2c.
func (g *gatewayStage) buildGRPCRoute(r *gwapiv1.GRPCRoute) {
	rt := &gwRoute{
		ref:  objects.Ref{Kind: objects.KindGRPCRoute, Namespace: r.Namespace, Name: r.Name},
		kind: kindGRPCRoute, obj: r, parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames,
	}
	g.buildRoute(rt, func(b *routeBuild) []gwIRRoute { return b.grpcRules(r) })
}

// grpcRules builds the IR routes of a GRPCRoute (ruleRoutes).
func (b *routeBuild) grpcRules(r *gwapiv1.GRPCRoute) []gwIRRoute {
	var out []gwIRRoute
	for i, rule := range r.Spec.Rules {
		out = append(out, b.rule(func() []gwIRRoute {
			where := ruleWhere(i, rule.Name)
			action, ok := b.grpcAction(rule, where)
			return ruleRoutes(b, i, rule.Name, where, action, ok, rule.Matches, grpcMatch)
		})...)
	}
	return out
}

// grpcAction is what a GRPCRoute rule does: its filters (the HTTPRoute
// filters GRPCRoute shares) and its backends.
func (b *routeBuild) grpcAction(rule gwapiv1.GRPCRouteRule, where string) (ir.Route, bool) {
	x := b.newRoute()
	ok := b.filters(httpFilters(rule.Filters), where+".filters", &x)
	if rule.SessionPersistence != nil {
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s.sessionPersistence is not supported: the rule answers 500", where)
		ok = false
	}
	refs := make([]weightedRef, len(rule.BackendRefs))
	for i, br := range rule.BackendRefs {
		w := fmt.Sprintf("%s.backendRefs[%d]", where, i)
		refs[i] = weightedRef{ref: br.BackendRef, where: w}
		refs[i].reqH, refs[i].respH, refs[i].ok = b.backendFilters(httpFilters(br.Filters), w+".filters")
	}
	clusters, served := b.weightedBackends(refs, where)
	x.Clusters = clusters
	return x, ok && served
}

// httpFilters are GRPCRoute filters as the HTTPRoute filters they are
// (same types, same fields).
func httpFilters(fs []gwapiv1.GRPCRouteFilter) []gwapiv1.HTTPRouteFilter {
	out := make([]gwapiv1.HTTPRouteFilter, len(fs))
	for i, f := range fs {
		out[i] = gwapiv1.HTTPRouteFilter{
			Type:                   gwapiv1.HTTPRouteFilterType(f.Type),
			RequestHeaderModifier:  f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier,
			RequestMirror:          f.RequestMirror,
			ExtensionRef:           f.ExtensionRef,
		}
	}
	return out
}

// The API's patterns of an exact service and method.
var (
	grpcServicePattern = regexp.MustCompile(`^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$`)
	grpcMethodPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*$`)
)

// grpcMatch is one GRPCRouteMatch as an IR route's match: an exact
// service and method is the exact path /service/method; a service alone
// the prefix /service; a method alone, or regular expressions, a regular
// expression on the path.
func grpcMatch(m gwapiv1.GRPCRouteMatch) (ir.Route, error) {
	x := ir.Route{PathKind: ir.PathPrefix, Path: "/"}
	if m.Method != nil {
		kind, path, err := grpcMethodPath(m.Method)
		if err != nil {
			return x, err
		}
		x.PathKind, x.Path = kind, path
	}
	seen := map[string]bool{}
	for i, h := range m.Headers {
		key := string(h.Name)
		if seen[key] {
			continue
		}
		seen[key] = true
		hm, err := valueMatch(string(orDefault(h.Type, gwapiv1.GRPCHeaderMatchExact)), string(h.Name), h.Value)
		if err != nil {
			return x, fmt.Errorf("headers[%d]: %w", i, err)
		}
		x.Headers = append(x.Headers, ir.HeaderMatch{Name: hm.Name, Kind: hm.Kind, Value: hm.Value})
	}
	return x, nil
}

// grpcMethodPath is the path match of a method match.
func grpcMethodPath(mm *gwapiv1.GRPCMethodMatch) (ir.PathMatchKind, string, error) {
	service, method := core.PtrValue(mm.Service), core.PtrValue(mm.Method)
	var kind ir.PathMatchKind
	var path string
	var err error
	switch typ := orDefault(mm.Type, gwapiv1.GRPCMethodMatchExact); {
	case service == "" && method == "":
		return 0, "", fmt.Errorf("method: set service, method or both")
	case typ == gwapiv1.GRPCMethodMatchExact:
		kind, path, err = grpcExactMethodPath(service, method)
	case typ == gwapiv1.GRPCMethodMatchRegularExpression:
		kind, path, err = grpcRegexMethodPath(service, method)
	default:
		return 0, "", fmt.Errorf("method match type %q is not supported", typ)
	}
	if err != nil {
		return 0, "", err
	}
	if kind == ir.PathRegex {
		// The expression Envoy runs, whole.
		if err := core.RegexValid(path); err != nil {
			return 0, "", fmt.Errorf("method: %w", err)
		}
	}
	return kind, path, nil
}

// grpcExactMethodPath is the path match of an exact service and method
// (either may be unset): the exact path /service/method, the prefix
// /service, or a regular expression for a method of any service.
func grpcExactMethodPath(service, method string) (ir.PathMatchKind, string, error) {
	if service != "" && !grpcServicePattern.MatchString(service) {
		return 0, "", fmt.Errorf("method.service %q is not a gRPC service name", service)
	}
	if method != "" && !grpcMethodPattern.MatchString(method) {
		return 0, "", fmt.Errorf("method.method %q is not a gRPC method name", method)
	}
	switch {
	case method == "":
		return ir.PathPrefix, "/" + service, nil
	case service == "":
		return ir.PathRegex, "/[^/]+/" + regexp.QuoteMeta(method), nil
	}
	return ir.PathExact, "/" + service + "/" + method, nil
}

// grpcRegexMethodPath is the path match of regular expressions of a
// service and a method (either may be unset: any).
func grpcRegexMethodPath(service, method string) (ir.PathMatchKind, string, error) {
	for _, re := range []string{service, method} {
		if err := core.RegexValid(re); err != nil {
			return 0, "", fmt.Errorf("method: %w", err)
		}
	}
	return ir.PathRegex, "/" + orAny(service) + "/" + orAny(method), nil
}

// orAny is a regular expression of a service or method, or any when
// unset.
func orAny(re string) string {
	if re == "" {
		return "[^/]+"
	}
	return "(?:" + re + ")"
}
