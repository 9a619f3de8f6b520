package gatewayapi

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// filters applies a rule's filters (HTTPRoute's; GRPCRoute's are a subset)
// to its action x; false when one cannot be honoured: the rule then
// answers 500 and the route's conditions say why (an ExtensionRef in
// ResolvedRefs, the others in Accepted).
func (b *routeBuild) filters(fs []gwapiv1.HTTPRouteFilter, where string, x *ir.Route) bool {
	ok := true
	unsupported := func(reason, format string, args ...any) {
		b.dropped.add(reason, "%s: "+format+": the rule answers 500", append([]any{where}, args...)...)
		ok = false
	}
	seen := map[gwapiv1.HTTPRouteFilterType]bool{}
	for i, f := range fs {
		where := fmt.Sprintf("%s[%d]", where, i)
		if seen[f.Type] && !repeatableFilter(f.Type) {
			unsupported(string(gwapiv1.RouteReasonUnsupportedValue), "filter %s given twice", f.Type)
			continue
		}
		seen[f.Type] = true
		if err := filterFieldsMatchType(f); err != nil {
			unsupported(string(gwapiv1.RouteReasonUnsupportedValue), "%v", err)
			continue
		}
		honoured, err := b.applyFilter(f, where, x)
		if err != nil {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: %v: the rule answers 500", where, err)
			ok = false
		}
		ok = honoured && ok
	}
	if seen[gwapiv1.HTTPRouteFilterRequestRedirect] && seen[gwapiv1.HTTPRouteFilterURLRewrite] {
		unsupported(string(gwapiv1.RouteReasonIncompatibleFilters), "RequestRedirect and URLRewrite cannot be combined")
	}
	return ok
}

// repeatableFilter reports whether a rule may have several filters of
// type t: mirrors and extensions add up, the others would overwrite each
// other.
func repeatableFilter(t gwapiv1.HTTPRouteFilterType) bool {
	return t == gwapiv1.HTTPRouteFilterRequestMirror || t == gwapiv1.HTTPRouteFilterExtensionRef
}

// applyFilter applies one filter, of a type that matches its fields, to
// x; false, with no error, when an ExtensionRef cannot be honoured (it
// says why in ResolvedRefs).
func (b *routeBuild) applyFilter(f gwapiv1.HTTPRouteFilter, where string, x *ir.Route) (bool, error) {
	switch f.Type {
	case gwapiv1.HTTPRouteFilterRequestHeaderModifier:
		return true, mergeHeaderFilter(&x.RequestHeaders, f.RequestHeaderModifier, true)
	case gwapiv1.HTTPRouteFilterResponseHeaderModifier:
		return true, mergeHeaderFilter(&x.ResponseHeaders, f.ResponseHeaderModifier, false)
	case gwapiv1.HTTPRouteFilterRequestRedirect:
		r, err := redirect(f.RequestRedirect)
		x.Redirect = r
		return true, err
	case gwapiv1.HTTPRouteFilterURLRewrite:
		return true, b.urlRewrite(f.URLRewrite, x)
	case gwapiv1.HTTPRouteFilterRequestMirror:
		b.mirror(f.RequestMirror, where, x)
		return true, nil
	case gwapiv1.HTTPRouteFilterCORS:
		p, err := cors(f.CORS)
		x.CORS = p
		return true, err
	case gwapiv1.HTTPRouteFilterExtensionRef:
		return b.extensionRef(f.ExtensionRef, where, x), nil
	}
	return true, fmt.Errorf("filter type %q is not supported", f.Type)
}

var errFilterConfig = errors.New("the filter's configuration (the field named as its type) is missing")

// filterFieldsMatchType refuses a filter that sets the configuration of
// another type than its own: the API server refuses it, but objects read
// from files did not go through it, and the other field would be ignored
// (an externalAuth or a urlRewrite the owner wrote, not applied).
func filterFieldsMatchType(f gwapiv1.HTTPRouteFilter) error {
	for _, c := range []struct {
		typ   gwapiv1.HTTPRouteFilterType
		field string
		set   bool
	}{
		{gwapiv1.HTTPRouteFilterRequestHeaderModifier, "requestHeaderModifier", f.RequestHeaderModifier != nil},
		{gwapiv1.HTTPRouteFilterResponseHeaderModifier, "responseHeaderModifier", f.ResponseHeaderModifier != nil},
		{gwapiv1.HTTPRouteFilterRequestMirror, "requestMirror", f.RequestMirror != nil},
		{gwapiv1.HTTPRouteFilterRequestRedirect, "requestRedirect", f.RequestRedirect != nil},
		{gwapiv1.HTTPRouteFilterURLRewrite, "urlRewrite", f.URLRewrite != nil},
		{gwapiv1.HTTPRouteFilterCORS, "cors", f.CORS != nil},
		{gwapiv1.HTTPRouteFilterExternalAuth, "externalAuth", f.ExternalAuth != nil},
		{gwapiv1.HTTPRouteFilterExtensionRef, "extensionRef", f.ExtensionRef != nil},
	} {
		if c.set && c.typ != f.Type {
			return fmt.Errorf("a filter of type %s must not set %s (the configuration of type %s)", f.Type, c.field, c.typ)
		}
	}
	return nil
}

// mergeHeaderFilter adds a header modifier to a headers policy (created
// when nil), checked as an HTTPProxy's headers policy is (headers.go).
func mergeHeaderFilter(dst **ir.HeadersPolicy, f *gwapiv1.HTTPHeaderFilter, request bool) error {
	if f == nil {
		return errFilterConfig
	}
	hp := &contourv1.HeadersPolicy{Remove: f.Remove}
	for _, h := range f.Set {
		hp.Set = append(hp.Set, contourv1.HeaderValue{Name: string(h.Name), Value: h.Value})
	}
	p, err := core.HeadersPolicy(hp, request)
	if err != nil {
		return err
	}
	for _, h := range f.Add {
		if err := core.HeaderValueValid("add", string(h.Name), h.Value); err != nil {
			return err
		}
		if strings.EqualFold(string(h.Name), "host") {
			return fmt.Errorf("adding a %q header is not supported", h.Name)
		}
		p.Add = append(p.Add, ir.HeaderValue{Name: string(h.Name), Value: h.Value})
	}
	if *dst == nil {
		*dst = &ir.HeadersPolicy{}
	}
	d := *dst
	d.Set, d.Add, d.Remove = append(d.Set, p.Set...), append(d.Add, p.Add...), append(d.Remove, p.Remove...)
	if p.HostRewrite != "" {
		d.HostRewrite = p.HostRewrite
	}
	return nil
}

// redirectCodes are the statuses a RequestRedirect may answer with (the
// API's enum; Envoy has all of them).
var redirectCodes = []int{301, 302, 303, 307, 308}

// redirect reads a RequestRedirect filter.
func redirect(f *gwapiv1.HTTPRequestRedirectFilter) (*ir.Redirect, error) {
	if f == nil {
		return nil, errFilterConfig
	}
	out := &ir.Redirect{StatusCode: 302}
	if s := f.Scheme; s != nil {
		if *s != "http" && *s != "https" {
			return nil, fmt.Errorf("scheme %q is not http or https", *s)
		}
		out.Scheme = *s
	}
	if h := f.Hostname; h != nil {
		if err := preciseHostnameValid(string(*h)); err != nil {
			return nil, err
		}
		out.Hostname = string(*h)
	}
	if p := f.Port; p != nil {
		if *p < 1 || *p > 65535 {
			return nil, fmt.Errorf("port %d is not a port", *p)
		}
		out.Port = uint32(*p)
	}
	if c := f.StatusCode; c != nil {
		if !slices.Contains(redirectCodes, *c) {
			return nil, fmt.Errorf("statusCode %d is not a redirect: use one of %v", *c, redirectCodes)
		}
		out.StatusCode = *c
	}
	if f.Path != nil {
		p, err := pathModifier(f.Path)
		if err != nil {
			return nil, err
		}
		out.Path = p
	}
	return out, nil
}

// urlRewrite applies a URLRewrite filter: the host becomes the request's
// authority, the path replaces the request's path (or its matched
// prefix).
func (b *routeBuild) urlRewrite(f *gwapiv1.HTTPURLRewriteFilter, x *ir.Route) error {
	if f == nil {
		return errFilterConfig
	}
	if h := f.Hostname; h != nil {
		if err := preciseHostnameValid(string(*h)); err != nil {
			return err
		}
		if x.RequestHeaders == nil {
			x.RequestHeaders = &ir.HeadersPolicy{}
		}
		x.RequestHeaders.HostRewrite = string(*h)
	}
	if f.Path != nil {
		p, err := pathModifier(f.Path)
		if err != nil {
			return err
		}
		x.PathRewrite = p
	}
	return nil
}

func preciseHostnameValid(h string) error {
	if strings.HasPrefix(h, "*") {
		return fmt.Errorf("hostname %q: a wildcard is not allowed here", h)
	}
	return gatewayHostnameValid(strings.ToLower(h))
}

// pathModifier reads a redirect's or rewrite's path.
func pathModifier(m *gwapiv1.HTTPPathModifier) (*ir.PathRewrite, error) {
	var value *string
	out := &ir.PathRewrite{}
	field := "replaceFullPath"
	switch m.Type {
	case gwapiv1.FullPathHTTPPathModifier:
		value = m.ReplaceFullPath
	case gwapiv1.PrefixMatchHTTPPathModifier:
		value, out.Prefix, field = m.ReplacePrefixMatch, true, "replacePrefixMatch"
	default:
		return nil, fmt.Errorf("path type %q is not supported", m.Type)
	}
	if value == nil {
		return nil, fmt.Errorf("path type %s needs %s", m.Type, field)
	}
	if err := core.PathConditionValid("path", *value); err != nil {
		return nil, err
	}
	out.Value = *value
	return out, nil
}

// mirror adds a RequestMirror filter's backend to the route's mirrors. A
// mirror that cannot be resolved is left out (ResolvedRefs says why): the
// traffic itself is unaffected.
func (b *routeBuild) mirror(f *gwapiv1.HTTPRequestMirrorFilter, where string, x *ir.Route) {
	if f == nil {
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: %v: the mirror is left out", where, errFilterConfig)
		return
	}
	percent := 100.0
	switch {
	case f.Percent != nil && f.Fraction != nil:
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: percent and fraction cannot both be set: the mirror is left out", where)
		return
	case f.Percent != nil:
		percent = float64(*f.Percent)
	case f.Fraction != nil:
		den := int32(100)
		if f.Fraction.Denominator != nil {
			den = *f.Fraction.Denominator
		}
		if den <= 0 || f.Fraction.Numerator < 0 || f.Fraction.Numerator > den {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: fraction %d/%d is not between 0 and 1: the mirror is left out", where, f.Fraction.Numerator, den)
			return
		}
		percent = 100 * float64(f.Fraction.Numerator) / float64(den)
	}
	if percent < 0 || percent > 100 {
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: percent %v is not between 0 and 100: the mirror is left out", where, percent)
		return
	}
	if c := b.backendCluster(f.BackendRef, where+".backendRef"); c != "" {
		x.Mirrors = append(x.Mirrors, ir.Mirror{Cluster: c, Percent: percent})
	}
}

// backendFilters reads a backendRef's own filters: header modifiers only
// (what Envoy applies per weighted cluster); false when it has another.
func (b *routeBuild) backendFilters(fs []gwapiv1.HTTPRouteFilter, where string) (req, resp *ir.HeadersPolicy, ok bool) {
	ok = true
	for i, f := range fs {
		if err := filterFieldsMatchType(f); err != nil {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s[%d]: %v: the backend answers 500", where, i, err)
			ok = false
			continue
		}
		var err error
		switch f.Type {
		case gwapiv1.HTTPRouteFilterRequestHeaderModifier:
			err = mergeHeaderFilter(&req, f.RequestHeaderModifier, true)
		case gwapiv1.HTTPRouteFilterResponseHeaderModifier:
			err = mergeHeaderFilter(&resp, f.ResponseHeaderModifier, false)
		case gwapiv1.HTTPRouteFilterExtensionRef:
			b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s[%d]: ExtensionRef: no extension of this kind is registered: the backend answers 500", where, i)
			ok = false
			continue
		default:
			err = fmt.Errorf("filter type %q is not supported on a backend", f.Type)
		}
		if err != nil {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s[%d]: %v: the backend answers 500", where, i, err)
			ok = false
		}
	}
	return req, resp, ok
}
