package translator

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
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
	}
	if timeout != nil {
		grpc.Timeout = durationpb.New(*timeout)
	}
	return grpc
}
