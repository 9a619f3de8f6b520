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

// extensionRetryPolicy sends a call again, to another endpoint, when it
// never reached a server: the connection was refused (a replica stopping
// or not started yet) or the stream refused (it came in after the
// server's GOAWAY). A rolling restart of a replicated auth or processing
// server then fails no request, even when its routes fail closed. A call a
// server has begun is not sent again (a rate-limit hit is not counted
// twice). The backoff is the route retries' (25 ms), not 1 s.
var extensionRetryPolicy = &corev3.RetryPolicy{
	RetryOn:    "connect-failure,refused-stream",
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
