package translator

import (
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// OpenTelemetryTracerName is Envoy's OpenTelemetry tracer.
const OpenTelemetryTracerName = "envoy.tracers.opentelemetry"

// hcmTracing is an HCM's tracing: spans exported over OTLP gRPC to the
// collector's cluster; nil for none. With tracing on, Envoy also starts a
// child span for each ext_authz and ext_proc gRPC call and sends the trace
// context with it, so the servers' spans join the request's trace.
func hcmTracing(t *ir.Tracing) *hcmv3.HttpConnectionManager_Tracing {
	if t == nil {
		return nil
	}
	out := &hcmv3.HttpConnectionManager_Tracing{
		OverallSampling:  &typev3.Percent{Value: t.OverallSampling},
		MaxPathTagLength: wrapperspb.UInt32(t.MaxPathTagLength),
		Provider: &tracev3.Tracing_Http{
			Name: OpenTelemetryTracerName,
			ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: mustAny(&tracev3.OpenTelemetryConfig{
				GrpcService: grpcService(t.Cluster, t.Authority, t.Timeout),
				ServiceName: t.ServiceName,
			})},
		},
	}
	for _, tag := range t.Tags {
		out.CustomTags = append(out.CustomTags, customTag(tag))
	}
	return out
}

func customTag(t ir.TracingTag) *tracingv3.CustomTag {
	c := &tracingv3.CustomTag{Tag: t.Name}
	switch {
	case t.RequestHeader != "":
		c.Type = &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: t.RequestHeader}}
	case t.Environment != "":
		c.Type = &tracingv3.CustomTag_Environment_{Environment: &tracingv3.CustomTag_Environment{Name: t.Environment}}
	default:
		c.Type = &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: t.Literal}}
	}
	return c
}
