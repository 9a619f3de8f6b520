package httpproxy

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// hostGlobalRateLimits is a root's global rate limit: its own policy, else
// the configuration file's default one; nil when the one that applies
// disables it. An invalid one is an error on the root: never served
// unlimited.
func (b *rootBuilder) hostGlobalRateLimits(vh *contourv1.VirtualHost, st *status.Object) *ir.GlobalRateLimits {
	var policy *contourv1.GlobalRateLimitPolicy
	where := "Spec.VirtualHost.RateLimitPolicy.Global"
	if vh.RateLimitPolicy != nil {
		policy = vh.RateLimitPolicy.Global
	}
	if cfg := b.R.Opts().RateLimitService; policy == nil && cfg != nil {
		policy, where = cfg.DefaultGlobalRateLimitPolicy, "the configuration file's rateLimitService.defaultGlobalRateLimitPolicy"
	}
	if policy == nil {
		return nil
	}
	g, err := b.globalRateLimits(policy, st)
	if err != nil {
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonRateLimitPolicyNotValid, where+": "+err.Error())
		return nil
	}
	if g.Disabled {
		return nil // the host sends none: nothing to configure
	}
	return g
}

// routeGlobalRateLimits sets the route's own global rate limit, which
// replaces its host's: its descriptors, or none (disabled). A route that
// redirects or answers directly is never sent to the service (Envoy
// limits proxied routes only), so it cannot have one.
func (b *rootBuilder) routeGlobalRateLimits(rt *Route, r *contourv1.Route, st *status.Object, errs *routeErrors) {
	if r.RateLimitPolicy == nil || r.RateLimitPolicy.Global == nil {
		return
	}
	err := errors.New("a route that redirects or answers directly is not rate limited globally")
	if !answered(r) {
		rt.GlobalRateLimits, err = b.globalRateLimits(r.RateLimitPolicy.Global, st)
	}
	if err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRateLimitPolicyNotValid, "RateLimitPolicy.Global: %v", err)
	}
}

// globalRateLimits validates a host's or a route's global policy: Disabled,
// or descriptors sent to the configuration file's rate limit service (a
// warning on st when that service cannot be used).
func (b *rootBuilder) globalRateLimits(p *contourv1.GlobalRateLimitPolicy, st *status.Object) (*ir.GlobalRateLimits, error) {
	switch {
	case p.Disabled && len(p.Descriptors) > 0:
		return nil, errors.New("disabled and descriptors cannot both be set")
	case p.Disabled:
		return &ir.GlobalRateLimits{Disabled: true}, nil
	case len(p.Descriptors) == 0:
		return nil, errors.New("set descriptors, or disabled")
	case b.R.Global().RateLimit == nil:
		return nil, errors.New("global rate limiting needs the configuration file's rateLimitService")
	}
	ds, err := rateLimitDescriptors(p.Descriptors)
	if err != nil {
		return nil, err
	}
	if problem := b.R.Global().RateLimitProblem; problem != nil {
		st.AddWarning(problem.Type, problem.Reason, problem.Message)
	}
	return &ir.GlobalRateLimits{Service: b.R.Global().RateLimit, Descriptors: ds}, nil
}

// rateLimitDescriptors validates descriptors: each with entries, each
// entry with exactly one kind, and the values Envoy needs.
func rateLimitDescriptors(in []contourv1.RateLimitDescriptor) ([]ir.RateLimitDescriptor, error) {
	out := make([]ir.RateLimitDescriptor, len(in))
	for i, d := range in {
		if len(d.Entries) == 0 {
			return nil, fmt.Errorf("descriptors[%d]: a descriptor needs entries", i)
		}
		for j, e := range d.Entries {
			entry, err := rateLimitEntry(e)
			if err != nil {
				return nil, fmt.Errorf("descriptors[%d].entries[%d]: %v", i, j, err)
			}
			out[i].Entries = append(out[i].Entries, entry)
		}
	}
	return out, nil
}

// rateLimitEntry checks one descriptor entry: it sets exactly one of
// genericKey, requestHeader, requestHeaderValueMatch and remoteAddress.
func rateLimitEntry(e contourv1.RateLimitDescriptorEntry) (ir.RateLimitEntry, error) {
	var out ir.RateLimitEntry
	var err error
	n := 0
	if g := e.GenericKey; g != nil {
		n++
		if out.GenericKey, err = genericKeyEntry(g); err != nil {
			return out, err
		}
	}
	if h := e.RequestHeader; h != nil {
		n++
		if out.RequestHeader, err = requestHeaderEntry(h); err != nil {
			return out, err
		}
	}
	if m := e.RequestHeaderValueMatch; m != nil {
		n++
		if out.HeaderMatch, err = headerValueMatchEntry(m); err != nil {
			return out, err
		}
	}
	if e.RemoteAddress != nil {
		n++
		out.RemoteAddress = true
	}
	if n != 1 {
		return out, fmt.Errorf("an entry sets exactly one of genericKey, requestHeader, requestHeaderValueMatch and remoteAddress")
	}
	return out, nil
}

// genericKeyEntry checks a genericKey entry.
func genericKeyEntry(g *contourv1.GenericKeyDescriptor) (*ir.GenericKeyEntry, error) {
	if g.Value == "" {
		return nil, fmt.Errorf("genericKey.value is required")
	}
	if err := core.NoControlBytes(g.Key + g.Value); err != nil {
		return nil, fmt.Errorf("genericKey %w", err)
	}
	return &ir.GenericKeyEntry{Key: g.Key, Value: g.Value}, nil
}

// requestHeaderEntry checks a requestHeader entry.
func requestHeaderEntry(h *contourv1.RequestHeaderDescriptor) (*ir.RequestHeaderEntry, error) {
	if msgs := validation.IsHTTPHeaderName(h.HeaderName); len(msgs) > 0 {
		return nil, fmt.Errorf("requestHeader.headerName %q is not a header name", h.HeaderName)
	}
	if h.DescriptorKey == "" {
		return nil, fmt.Errorf("requestHeader.descriptorKey is required")
	}
	if err := core.NoControlBytes(h.DescriptorKey); err != nil {
		return nil, fmt.Errorf("requestHeader.descriptorKey %w", err)
	}
	return &ir.RequestHeaderEntry{Header: h.HeaderName, Key: h.DescriptorKey}, nil
}

// headerValueMatchEntry checks a requestHeaderValueMatch entry: headers
// (header conditions) and a value.
func headerValueMatchEntry(m *contourv1.RequestHeaderValueMatchDescriptor) (*ir.HeaderMatchEntry, error) {
	if len(m.Headers) == 0 || m.Value == "" {
		return nil, fmt.Errorf("requestHeaderValueMatch needs headers and a value")
	}
	if err := core.NoControlBytes(m.Value); err != nil {
		return nil, fmt.Errorf("requestHeaderValueMatch.value %w", err)
	}
	hm := &ir.HeaderMatchEntry{Value: m.Value, ExpectMatch: m.ExpectMatch}
	for i := range m.Headers {
		h, err := headerMatch(&m.Headers[i])
		if err != nil {
			return nil, fmt.Errorf("requestHeaderValueMatch.headers[%d]: %v", i, err)
		}
		hm.Headers = append(hm.Headers, h)
	}
	return hm, nil
}
