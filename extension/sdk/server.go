package sdk

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// Server implements v1alpha1.ExtensionServerServer. Its zero value answers
// every hook with its input unchanged; each function field, when set,
// answers its hook instead. The functions may change the resources of the
// request in place and return them.
//
// The answers of RouteModify and ClusterModify must hold a route and a
// cluster (Portcullis treats an unset one as an invalid answer): Server
// turns one without into an Internal error, so the mistake shows in the
// extension's own logs and tests. A nil response is answered as an empty
// one (for VirtualHostModify and HTTPListenerModify: drop the resource).
type Server struct {
	v1alpha1.UnimplementedExtensionServerServer

	// RouteModify answers PostRouteModify.
	RouteModify func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error)
	// VirtualHostModify answers PostVirtualHostModify.
	VirtualHostModify func(context.Context, *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error)
	// HTTPListenerModify answers PostHTTPListenerModify.
	HTTPListenerModify func(context.Context, *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error)
	// TranslateInsert answers PostTranslateInsert.
	TranslateInsert func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error)
	// TranslateModify answers PostTranslateModify.
	TranslateModify func(context.Context, *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error)
	// ClusterModify answers PostClusterModify.
	ClusterModify func(context.Context, *v1alpha1.PostClusterModifyRequest) (*v1alpha1.PostClusterModifyResponse, error)
	// EndpointsModify answers PostEndpointsModify.
	EndpointsModify func(context.Context, *v1alpha1.PostEndpointsModifyRequest) (*v1alpha1.PostEndpointsModifyResponse, error)
}

var _ v1alpha1.ExtensionServerServer = (*Server)(nil)

// PostRouteModify returns the route unchanged unless RouteModify is set.
func (s *Server) PostRouteModify(ctx context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
	if s.RouteModify == nil {
		return &v1alpha1.PostRouteModifyResponse{Route: req.GetRoute()}, nil
	}
	resp, err := s.RouteModify(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.GetRoute() == nil {
		return nil, status.Error(codes.Internal, "PostRouteModify: the answer has no route (a route cannot be dropped here; return the request's to keep it)")
	}
	return resp, nil
}

// PostVirtualHostModify returns the virtual host unchanged unless
// VirtualHostModify is set.
func (s *Server) PostVirtualHostModify(ctx context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
	if s.VirtualHostModify == nil {
		return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: req.GetVirtualHost()}, nil
	}
	resp, err := s.VirtualHostModify(ctx, req)
	if err != nil {
		return nil, err
	}
	return orEmpty(resp), nil
}

// PostHTTPListenerModify returns the listener unchanged unless
// HTTPListenerModify is set.
func (s *Server) PostHTTPListenerModify(ctx context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
	if s.HTTPListenerModify == nil {
		return &v1alpha1.PostHTTPListenerModifyResponse{Listener: req.GetListener()}, nil
	}
	resp, err := s.HTTPListenerModify(ctx, req)
	if err != nil {
		return nil, err
	}
	return orEmpty(resp), nil
}

// PostTranslateInsert adds nothing unless TranslateInsert is set.
func (s *Server) PostTranslateInsert(ctx context.Context, req *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
	if s.TranslateInsert == nil {
		return &v1alpha1.PostTranslateInsertResponse{}, nil
	}
	resp, err := s.TranslateInsert(ctx, req)
	if err != nil {
		return nil, err
	}
	return orEmpty(resp), nil
}

// PostTranslateModify returns the configuration unchanged unless
// TranslateModify is set.
func (s *Server) PostTranslateModify(ctx context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
	if s.TranslateModify == nil {
		return &v1alpha1.PostTranslateModifyResponse{
			Clusters:            req.GetClusters(),
			Secrets:             req.GetSecrets(),
			Listeners:           req.GetListeners(),
			RouteConfigurations: req.GetRouteConfigurations(),
		}, nil
	}
	resp, err := s.TranslateModify(ctx, req)
	if err != nil {
		return nil, err
	}
	return orEmpty(resp), nil
}

// PostClusterModify returns the cluster unchanged unless ClusterModify is
// set.
func (s *Server) PostClusterModify(ctx context.Context, req *v1alpha1.PostClusterModifyRequest) (*v1alpha1.PostClusterModifyResponse, error) {
	if s.ClusterModify == nil {
		return &v1alpha1.PostClusterModifyResponse{Cluster: req.GetCluster()}, nil
	}
	resp, err := s.ClusterModify(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.GetCluster() == nil {
		return nil, status.Error(codes.Internal, "PostClusterModify: the answer has no cluster (return the request's to keep it)")
	}
	return resp, nil
}

// PostEndpointsModify returns the endpoints unchanged unless
// EndpointsModify is set.
func (s *Server) PostEndpointsModify(ctx context.Context, req *v1alpha1.PostEndpointsModifyRequest) (*v1alpha1.PostEndpointsModifyResponse, error) {
	if s.EndpointsModify == nil {
		return &v1alpha1.PostEndpointsModifyResponse{LoadAssignment: req.GetLoadAssignment()}, nil
	}
	resp, err := s.EndpointsModify(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.GetLoadAssignment() == nil {
		return nil, status.Error(codes.Internal, "PostEndpointsModify: the answer has no load_assignment (return the request's to keep it)")
	}
	return resp, nil
}

// orEmpty returns resp, or a new empty response when resp is nil.
func orEmpty[T any, P interface{ *T }](resp P) P {
	if resp == nil {
		return new(T)
	}
	return resp
}
