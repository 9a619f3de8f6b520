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
		RetryPolicy: extensionRetryPolicy,
	}
	if timeout != nil {
		grpc.Timeout = durationpb.New(*timeout)
	}
	return grpc
}

// extensionRetryPolicy sends a call again, to another endpoint, when no
// answer to it began: the connection was refused (a replica stopping or
// not started yet), the stream refused (it came in after the server's
// GOAWAY) or reset before any answer (a connection a stopping replica
// closed as the call went out). A rolling restart of a replicated auth or
// processing server then fails no request, even when its routes fail
// closed: checks and processing are safe to ask again. Rate-limit calls
// are not resent after a reset (rateLimitRetryPolicy): the server may have
// counted the hit. The backoff is the route retries' (25 ms), not 1 s.
var extensionRetryPolicy = grpcRetryPolicy("connect-failure,refused-stream,reset")

// rateLimitService is grpcService for the rate limit service, whose calls
// are resent only when they never reached a server.
func rateLimitService(cluster, authority string) *corev3.GrpcService {
	g := grpcService(cluster, authority, nil)
	g.RetryPolicy = rateLimitRetryPolicy
	return g
}

// rateLimitRetryPolicy resends only calls that never reached a server.
var rateLimitRetryPolicy = grpcRetryPolicy("connect-failure,refused-stream")

func grpcRetryPolicy(on string) *corev3.RetryPolicy {
	return &corev3.RetryPolicy{
		RetryOn:    on,
		NumRetries: wrapperspb.UInt32(2),
		RetryBackOff: &corev3.BackoffStrategy{
			BaseInterval: durationpb.New(25 * time.Millisecond),
			MaxInterval:  durationpb.New(250 * time.Millisecond),
		},
		RetryHostPredicate: []*corev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &corev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: mustAny(&previoushostsv3.PreviousHostsPredicate{})},
		}},
		HostSelectionRetryMaxAttempts: 3,
	}
}
