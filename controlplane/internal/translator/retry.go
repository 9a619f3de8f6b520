package translator

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// retryPolicy is a route's retry_policy: its retries, or only a per-try
// timeout (no retry_on: a policy that never retries, only bounds the
// try); nil for neither.
func retryPolicy(r *ir.Route) *routev3.RetryPolicy {
	if p := r.Retry; p != nil {
		out := &routev3.RetryPolicy{
			RetryOn:              strings.Join(p.RetryOn, ","),
			NumRetries:           wrapperspb.UInt32(p.NumRetries),
			RetriableStatusCodes: p.RetriableStatusCodes,
		}
		if p.PerTryTimeout != nil && *p.PerTryTimeout > 0 {
			out.PerTryTimeout = durationpb.New(*p.PerTryTimeout)
		}
		if p.Backoff != nil && *p.Backoff > 0 {
			out.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(*p.Backoff)}
		}
		return out
	}
	if r.PerTryTimeout != nil {
		return &routev3.RetryPolicy{PerTryTimeout: durationpb.New(*r.PerTryTimeout)}
	}
	return nil
}
