package extension

import (
	"context"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// egClient calls an extension of the Envoy Gateway dialect
// (envoygateway.extension.EnvoyGatewayExtension, from Envoy Gateway's own
// Go module) behind the Portcullis contract's client: the runner's
// deadlines, phase budget, answer cache, validation and failure policy
// hold for both dialects alike. It applies Envoy Gateway's answer rules:
//
//   - a nil resource in an answer means "no change" (the request's is
//     kept), where the Portcullis dialect drops a virtual host or a
//     listener;
//   - PostRouteModify gets the route's ExtensionRef objects and its
//     policies apart (extension_resources, extension_policies);
//   - PostHTTPListenerModify gets the policies attached to the listener's
//     Gateways;
//   - PostTranslateModify is sent, and replaces, only the resource types
//     Translation selects; its context holds every policy of the
//     extension's kinds.
type egClient struct {
	c  egpb.EnvoyGatewayExtensionClient
	tr Translation
}

var _ v1alpha1.ExtensionServerClient = egClient{}

func newEGClient(conn grpc.ClientConnInterface, tr Translation) egClient {
	return egClient{c: egpb.NewEnvoyGatewayExtensionClient(conn), tr: tr}
}

// egResources converts extension resources; policy selects the policies
// (true) or the others.
func egResources(rs []*v1alpha1.ExtensionResource, policy bool) []*egpb.ExtensionResource {
	var out []*egpb.ExtensionResource
	for _, r := range rs {
		if r.GetPolicy() == policy {
			out = append(out, &egpb.ExtensionResource{UnstructuredBytes: r.GetUnstructuredJson()})
		}
	}
	return out
}

func (e egClient) PostRouteModify(ctx context.Context, in *v1alpha1.PostRouteModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostRouteModifyResponse, error) {
	resp, err := e.c.PostRouteModify(ctx, &egpb.PostRouteModifyRequest{
		Route: in.GetRoute(),
		PostRouteContext: &egpb.PostRouteExtensionContext{
			ExtensionResources: egResources(in.GetExtensionResources(), false),
			Hostnames:          in.GetContext().GetHostnames(),
			ExtensionPolicies:  egResources(in.GetExtensionResources(), true),
		},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostRouteModifyResponse{Route: orIn(resp.GetRoute(), in.GetRoute())}, nil
}

func (e egClient) PostVirtualHostModify(ctx context.Context, in *v1alpha1.PostVirtualHostModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostVirtualHostModifyResponse, error) {
	resp, err := e.c.PostVirtualHostModify(ctx, &egpb.PostVirtualHostModifyRequest{
		VirtualHost: in.GetVirtualHost(), PostVirtualHostContext: &egpb.PostVirtualHostExtensionContext{},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: orIn(resp.GetVirtualHost(), in.GetVirtualHost())}, nil
}

func (e egClient) PostHTTPListenerModify(ctx context.Context, in *v1alpha1.PostHTTPListenerModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
	resp, err := e.c.PostHTTPListenerModify(ctx, &egpb.PostHTTPListenerModifyRequest{
		Listener: in.GetListener(),
		PostListenerContext: &egpb.PostHTTPListenerExtensionContext{
			ExtensionResources: egResources(in.GetContext().GetExtensionResources(), true),
		},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostHTTPListenerModifyResponse{Listener: orIn(resp.GetListener(), in.GetListener())}, nil
}

// PostTranslateInsert is not a hook of the dialect (registration refuses
// subscribing to it).
func (e egClient) PostTranslateInsert(context.Context, *v1alpha1.PostTranslateInsertRequest, ...grpc.CallOption) (*v1alpha1.PostTranslateInsertResponse, error) {
	return nil, status.Errorf(codes.Unimplemented, "%s is not a hook of dialect %s", HookPostTranslateInsert, DialectEnvoyGateway)
}

func (e egClient) PostTranslateModify(ctx context.Context, in *v1alpha1.PostTranslateModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostTranslateModifyResponse, error) {
	req := &egpb.PostTranslateModifyRequest{
		PostTranslateContext: &egpb.PostTranslateExtensionContext{ExtensionResources: egResources(in.GetExtensionPolicies(), true)},
		Clusters:             sent(e.tr.Clusters, in.GetClusters()),
		Secrets:              sent(e.tr.Secrets, in.GetSecrets()),
		Listeners:            sent(e.tr.Listeners, in.GetListeners()),
		Routes:               sent(e.tr.Routes, in.GetRouteConfigurations()),
	}
	resp, err := e.c.PostTranslateModify(ctx, req, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostTranslateModifyResponse{
		Clusters:            replaced(e.tr.Clusters, resp.GetClusters(), in.GetClusters()),
		Secrets:             replaced(e.tr.Secrets, resp.GetSecrets(), in.GetSecrets()),
		Listeners:           replaced(e.tr.Listeners, resp.GetListeners(), in.GetListeners()),
		RouteConfigurations: replaced(e.tr.Routes, resp.GetRoutes(), in.GetRouteConfigurations()),
	}, nil
}

func (e egClient) PostClusterModify(ctx context.Context, in *v1alpha1.PostClusterModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostClusterModifyResponse, error) {
	var backends []*egpb.ExtensionResource
	if b := in.GetBackend(); b != nil {
		backends = []*egpb.ExtensionResource{{UnstructuredBytes: b.GetUnstructuredJson()}}
	}
	resp, err := e.c.PostClusterModify(ctx, &egpb.PostClusterModifyRequest{
		Cluster: in.GetCluster(), PostClusterContext: &egpb.PostClusterExtensionContext{BackendExtensionResources: backends},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostClusterModifyResponse{Cluster: orIn(resp.GetCluster(), in.GetCluster())}, nil
}

func (e egClient) PostEndpointsModify(ctx context.Context, in *v1alpha1.PostEndpointsModifyRequest, opts ...grpc.CallOption) (*v1alpha1.PostEndpointsModifyResponse, error) {
	resp, err := e.c.PostEndpointsModify(ctx, &egpb.PostEndpointsModifyRequest{
		LoadAssignment: in.GetLoadAssignment(), PostEndpointsContext: &egpb.PostEndpointsExtensionContext{},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.PostEndpointsModifyResponse{LoadAssignment: orIn(resp.GetLoadAssignment(), in.GetLoadAssignment())}, nil
}

// orIn is an answer's resource, or the request's when the answer has none
// ("no change").
func orIn[M interface {
	*routev3.Route | *routev3.VirtualHost | *listenerv3.Listener | *clusterv3.Cluster | *endpointv3.ClusterLoadAssignment
}](answer, in M) M {
	if answer == nil {
		return in
	}
	return answer
}

// sent is what PostTranslateModify sends of a resource type: all or none.
func sent[M *clusterv3.Cluster | *tlsv3.Secret | *listenerv3.Listener | *routev3.RouteConfiguration](include bool, in []M) []M {
	if !include {
		return nil
	}
	return in
}

// replaced is a resource type after PostTranslateModify: the answer's list
// when the type was sent (an empty list removes them all, as in Envoy
// Gateway), else the request's.
func replaced[M *clusterv3.Cluster | *tlsv3.Secret | *listenerv3.Listener | *routev3.RouteConfiguration](include bool, answer, in []M) []M {
	if include {
		return answer
	}
	return in
}
