package extension

import (
	"context"
	"testing"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// egEndpoints answers PostEndpointsModify of the Envoy Gateway dialect.
type egEndpoints struct {
	egpb.UnimplementedEnvoyGatewayExtensionServer
	answer func(*endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment
}

func (s *egEndpoints) PostEndpointsModify(_ context.Context, req *egpb.PostEndpointsModifyRequest) (*egpb.PostEndpointsModifyResponse, error) {
	return &egpb.PostEndpointsModifyResponse{LoadAssignment: s.answer(req.GetLoadAssignment())}, nil
}

// PostEndpointsModify changes every cluster's endpoints, under both
// dialects (a nil answer of Envoy Gateway's is no change); a changed name
// or an endpoint on the host itself is refused.
func TestPostEndpointsModify(t *testing.T) {
	res := translate(t, fixtureYAML)
	if len(res.Endpoints) == 0 {
		t.Fatal("the fixture has no endpoints")
	}
	tagged := func(cla *endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment {
		cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
		for _, le := range cla.GetEndpoints() {
			for _, e := range le.GetLbEndpoints() {
				e.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"vendor": {Fields: map[string]*structpb.Value{"zone": structpb.NewStringValue("a")}}}}
			}
		}
		return cla
	}
	loopback := func(cla *endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment {
		cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
		cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().Address = "127.0.0.1"
		return cla
	}
	renamed := func(cla *endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment {
		cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
		cla.ClusterName += "-x"
		return cla
	}
	for _, tc := range []struct {
		name    string
		answer  func(*endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment
		invalid bool
		tagged  bool
	}{
		{"metadata added", tagged, false, true},
		{"an endpoint on loopback", loopback, true, false},
		{"the cluster renamed", renamed, true, false},
		{"nil (Envoy Gateway: no change)", func(*endpointv3.ClusterLoadAssignment) *endpointv3.ClusterLoadAssignment { return nil }, false, false},
	} {
		for _, dialect := range []Dialect{DialectPortcullis, DialectEnvoyGateway} {
			if tc.answer(res.Endpoints[0].(*endpointv3.ClusterLoadAssignment)) == nil && dialect == DialectPortcullis {
				continue // the Portcullis SDK answers its input when unset
			}
			t.Run(tc.name+"/"+string(dialect), func(t *testing.T) {
				var addr string
				if dialect == DialectEnvoyGateway {
					addr = listenEG(t, &egEndpoints{answer: tc.answer})
				} else {
					addr = sdktest.Listen(t, &sdk.Server{EndpointsModify: func(_ context.Context, req *v1alpha1.PostEndpointsModifyRequest) (*v1alpha1.PostEndpointsModifyResponse, error) {
						return &v1alpha1.PostEndpointsModifyResponse{LoadAssignment: tc.answer(req.GetLoadAssignment())}, nil
					}})
				}
				r := newRunner(t, Registration{Address: addr, Dialect: dialect, Hooks: []Hook{HookPostEndpointsModify}})
				out, failures := r.Apply(t.Context(), res, Refs{})
				if tc.invalid {
					if out != nil || len(failures) == 0 || failures[0].Outcome != OutcomeInvalid {
						t.Fatalf("accepted (failures %v)", failures)
					}
					return
				}
				if out == nil || len(failures) > 0 {
					t.Fatalf("failures %v", failures)
				}
				got := out.Endpoints[0].(*endpointv3.ClusterLoadAssignment).GetEndpoints()[0].GetLbEndpoints()[0].GetMetadata().GetFilterMetadata()["vendor"] != nil
				if got != tc.tagged {
					t.Errorf("endpoint metadata present %v, want %v", got, tc.tagged)
				}
			})
		}
	}
}
