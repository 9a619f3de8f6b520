package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// healthChecks are a cluster's active health checks: gRPC
// (grpc.health.v1), HTTP or TCP (connect only: no payload sent or
// expected); none for nil.
func healthChecks(hc *ir.HealthCheck) []*corev3.HealthCheck {
	if hc == nil {
		return nil
	}
	out := &corev3.HealthCheck{
		Timeout:            durationpb.New(hc.Timeout),
		Interval:           durationpb.New(hc.Interval),
		UnhealthyThreshold: wrapperspb.UInt32(hc.UnhealthyThreshold),
		HealthyThreshold:   wrapperspb.UInt32(hc.HealthyThreshold),
	}
	if hc.TCP {
		out.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}
	} else if h := hc.HTTP; h != nil {
		http := &corev3.HealthCheck_HttpHealthCheck{Host: h.Host, Path: h.Path}
		for _, r := range h.ExpectedStatuses {
			http.ExpectedStatuses = append(http.ExpectedStatuses, &typev3.Int64Range{Start: r.Start, End: r.End})
		}
		out.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: http}
	} else {
		out.HealthChecker = &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{
			ServiceName: hc.ServiceName,
			Authority:   hc.Authority,
		}}
	}
	return []*corev3.HealthCheck{out}
}
