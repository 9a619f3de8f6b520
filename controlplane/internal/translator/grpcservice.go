package translator

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// grpcService points at an ExtensionService cluster. A nil timeout leaves
// Envoy's default; 0 is no timeout (Envoy reads an explicit 0s as none; an
// unset ext_authz timeout would be 200ms).
func grpcService(cluster, authority string, timeout *time.Duration) *corev3.GrpcService {
	grpc := &corev3.GrpcService{
		TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
			ClusterName: cluster,
			Authority:   authority,
		}},
		RetryPolicy: extensionRetryPolicy(timeout),
	}
	if timeout != nil {
		grpc.Timeout = durationpb.New(*timeout)
	}
	return grpc
}

// extensionRetryOn sends a call again, to another endpoint, only when it
// provably never reached a server: the connection was refused (a replica
// stopping or not started yet), the stream refused (it came in after the
// server's GOAWAY), or the stream was reset before its request went out.
// A rolling restart of a replicated auth or processing server then fails no
// request, even when its routes fail closed. A call that reached a server
// is never sent again, whatever happened to it: an OIDC callback replays a
// one-time state, a rate-limit hit may have been counted, and a slow
// answer is not a failure.
const extensionRetryOn = "connect-failure,refused-stream,reset-before-request"

// maxCallTimeout is the per-try bound of a call whose own timeout is unset
// or infinite: Envoy gives every retried call one (below), and an hour is
// also the longest ext_proc message timeout it accepts.
const maxCallTimeout = time.Hour

// extensionRetryPolicy is the retry policy of a call with this timeout.
//
// Envoy turns a GrpcService's core RetryPolicy into a route retry policy
// whose per_try_timeout is retry_back_off.max_interval: a max_interval
// shorter than the call's timeout cuts every call at it (it was 250 ms, and
// every Check slower than that failed closed). So max_interval is the
// call's own timeout, or maxCallTimeout when it has none. The backoff is
// still short: Envoy's jittered backoff waits at most base * (2^n - 1)
// before the nth retry, 25 and 75 ms here, whatever max_interval is.
func extensionRetryPolicy(timeout *time.Duration) *corev3.RetryPolicy {
	perTry := maxCallTimeout
	if timeout != nil && *timeout > 0 && *timeout < maxCallTimeout {
		perTry = max(*timeout, retryBaseInterval)
	}
	return &corev3.RetryPolicy{
		RetryOn:    extensionRetryOn,
		NumRetries: wrapperspb.UInt32(2),
		RetryBackOff: &corev3.BackoffStrategy{
			BaseInterval: durationpb.New(retryBaseInterval),
			MaxInterval:  durationpb.New(perTry),
		},
		RetryHostPredicate: []*corev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &corev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: mustAny(&previoushostsv3.PreviousHostsPredicate{})},
		}},
		HostSelectionRetryMaxAttempts: 3,
	}
}

// retryBaseInterval is the route retries' backoff (Envoy's default for a
// GrpcService is 1 s).
const retryBaseInterval = 25 * time.Millisecond

// rateLimitService is grpcService for the rate limit service, whose calls
// the filter bounds by its own timeout: that is the per-try bound too.
func rateLimitService(cluster, authority string, timeout time.Duration) *corev3.GrpcService {
	g := grpcService(cluster, authority, nil)
	g.RetryPolicy = extensionRetryPolicy(&timeout)
	return g
}
