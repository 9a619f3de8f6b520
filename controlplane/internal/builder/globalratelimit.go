package builder

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// globalRateLimitService resolves the configuration file's
// rateLimitService, with its problem when its ExtensionService cannot be
// used: the filter then points at the ExtensionService's cluster, without
// endpoints, and Envoy answers 500 unless failOpen (as for the global
// authorization).
func (b stage) globalRateLimitService(r *config.RateLimitService) (*ir.RateLimitService, *status.Problem) {
	ns, name := r.Ref()
	ext, _, msg := b.r.extension(ns, name)
	s := &ir.RateLimitService{Domain: r.Domain, FailOpen: r.FailOpen, Timeout: DefaultAuthTimeout,
		XRateLimitHeaders: r.EnableXRateLimitHeaders, ResourceExhausted: r.EnableResourceExhaustedCode}
	if ext == nil {
		s.Cluster, s.Authority = b.unavailableCluster(ns, name), name+"."+ns
		return s, &status.Problem{Type: contourv1.ConditionTypeVirtualHostError, Reason: status.ReasonRateLimitServiceUnavailable,
			Message: fmt.Sprintf("global rate limit service (configuration file, rateLimitService): %s: rate limited requests fail%s until it is fixed", msg, failOpenNote(r.FailOpen))}
	}
	s.Cluster, s.Authority = ext.cluster.Name, ext.authority
	if ext.timeout != nil {
		s.Timeout = *ext.timeout
	}
	return s, nil
}

// hostGlobalRateLimits is a root's global rate limit: its own descriptors,
// else the configuration file's default policy, unless it disables it.
// Descriptors without a rate limit service to send them to, or invalid
// ones, are an error on the root: never served unlimited.
func (b *rootBuilder) hostGlobalRateLimits(vh *contourv1.VirtualHost, st *status.Object) *ir.GlobalRateLimits {
	var own *contourv1.GlobalRateLimitPolicy
	if vh.RateLimitPolicy != nil {
		own = vh.RateLimitPolicy.Global
	}
	fail := func(format string, args ...any) {
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonRateLimitPolicyNotValid, fmt.Sprintf(format, args...))
	}
	cfg := b.r.opts().RateLimitService
	policy, where := own, "Spec.VirtualHost.RateLimitPolicy.Global"
	switch {
	case own != nil && own.Disabled:
		if len(own.Descriptors) > 0 {
			fail("%s: disabled and descriptors cannot both be set", where)
		}
		return nil
	case own != nil && len(own.Descriptors) == 0:
		fail("%s: set descriptors, or disabled", where)
		return nil
	case own == nil && cfg != nil && cfg.DefaultGlobalRateLimitPolicy != nil && !cfg.DefaultGlobalRateLimitPolicy.Disabled:
		policy, where = cfg.DefaultGlobalRateLimitPolicy, "the configuration file's rateLimitService.defaultGlobalRateLimitPolicy"
	case own == nil:
		return nil
	}
	svc, problem := b.r.global().rateLimit, b.r.global().rateLimitProblem
	if svc == nil {
		fail("%s: global rate limiting needs the configuration file's rateLimitService", where)
		return nil
	}
	ds, err := rateLimitDescriptors(policy.Descriptors)
	if err != nil {
		fail("%s: %v", where, err)
		return nil
	}
	if problem != nil {
		st.AddWarning(problem.Type, problem.Reason, problem.Message)
	}
	return &ir.GlobalRateLimits{Service: svc, Descriptors: ds}
}

// routeGlobalRateLimits sets the route's own global rate limit, which
// replaces its host's: its descriptors, or none (disabled). A route that
// redirects or answers directly is never sent to the service (Envoy
// limits proxied routes only), so it cannot have one.
func (b *rootBuilder) routeGlobalRateLimits(rt *route, r contourv1.Route, st *status.Object, errs *routeErrors) {
	if r.RateLimitPolicy == nil || r.RateLimitPolicy.Global == nil {
		return
	}
	pol := r.RateLimitPolicy.Global
	fail := func(format string, args ...any) {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRateLimitPolicyNotValid, "RateLimitPolicy.Global: "+format, args...)
	}
	switch {
	case answered(r):
		fail("a route that redirects or answers directly is not rate limited globally")
	case pol.Disabled && len(pol.Descriptors) > 0:
		fail("disabled and descriptors cannot both be set")
	case pol.Disabled:
		rt.GlobalRateLimits = &ir.GlobalRateLimits{Disabled: true}
	case len(pol.Descriptors) == 0:
		fail("set descriptors, or disabled")
	case b.r.global().rateLimit == nil:
		fail("global rate limiting needs the configuration file's rateLimitService")
	default:
		ds, err := rateLimitDescriptors(pol.Descriptors)
		if err != nil {
			fail("%v", err)
			return
		}
		if p := b.r.global().rateLimitProblem; p != nil {
			st.AddWarning(p.Type, p.Reason, p.Message)
		}
		rt.GlobalRateLimits = &ir.GlobalRateLimits{Service: b.r.global().rateLimit, Descriptors: ds}
	}
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

func rateLimitEntry(e contourv1.RateLimitDescriptorEntry) (ir.RateLimitEntry, error) {
	var out ir.RateLimitEntry
	n := 0
	if g := e.GenericKey; g != nil {
		n++
		if g.Value == "" {
			return out, fmt.Errorf("genericKey.value is required")
		}
		if err := noControlBytes(g.Key + g.Value); err != nil {
			return out, fmt.Errorf("genericKey %w", err)
		}
		out.GenericKey = &ir.GenericKeyEntry{Key: g.Key, Value: g.Value}
	}
	if h := e.RequestHeader; h != nil {
		n++
		if msgs := validation.IsHTTPHeaderName(h.HeaderName); len(msgs) > 0 {
			return out, fmt.Errorf("requestHeader.headerName %q is not a header name", h.HeaderName)
		}
		if h.DescriptorKey == "" {
			return out, fmt.Errorf("requestHeader.descriptorKey is required")
		}
		if err := noControlBytes(h.DescriptorKey); err != nil {
			return out, fmt.Errorf("requestHeader.descriptorKey %w", err)
		}
		out.RequestHeader = &ir.RequestHeaderEntry{Header: h.HeaderName, Key: h.DescriptorKey}
	}
	if m := e.RequestHeaderValueMatch; m != nil {
		n++
		if len(m.Headers) == 0 || m.Value == "" {
			return out, fmt.Errorf("requestHeaderValueMatch needs headers and a value")
		}
		if err := noControlBytes(m.Value); err != nil {
			return out, fmt.Errorf("requestHeaderValueMatch.value %w", err)
		}
		hm := &ir.HeaderMatchEntry{Value: m.Value, ExpectMatch: m.ExpectMatch}
		for i := range m.Headers {
			h, err := headerMatch(&m.Headers[i])
			if err != nil {
				return out, fmt.Errorf("requestHeaderValueMatch.headers[%d]: %v", i, err)
			}
			hm.Headers = append(hm.Headers, h)
		}
		out.HeaderMatch = hm
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
