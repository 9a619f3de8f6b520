package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// routeMetadataNamespace is the filter_metadata key Envoy Gateway writes
// its routes' origin under: its extensions read it there, so ours is the
// same key and shape.
const routeMetadataNamespace = "envoy-gateway"

// routeMetadata is the metadata of the Envoy route of a route written in
// o: {"envoy-gateway": {"resources": [{kind, namespace, name,
// sectionName}]}}, Envoy Gateway's shape (sectionName only for a named
// rule), so that extensions written for Envoy Gateway find a route's
// HTTPRoute (or HTTPProxy) unchanged. nil without an origin: routes get
// one only when extensions are registered.
func routeMetadata(o *ir.RouteOrigin) *corev3.Metadata {
	if o == nil {
		return nil
	}
	fields := map[string]*structpb.Value{
		"kind":      structpb.NewStringValue(o.Kind),
		"namespace": structpb.NewStringValue(o.Namespace),
		"name":      structpb.NewStringValue(o.Name),
	}
	if o.SectionName != "" {
		fields["sectionName"] = structpb.NewStringValue(o.SectionName)
	}
	resource := structpb.NewStructValue(&structpb.Struct{Fields: fields})
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		routeMetadataNamespace: {Fields: map[string]*structpb.Value{
			"resources": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{resource}}),
		}},
	}}
}
