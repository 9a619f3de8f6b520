// Command egextension is an extension server written only against Envoy
// Gateway's published contract (envoygateway.extension.EnvoyGatewayExtension,
// from github.com/envoyproxy/gateway/proto/extension), behaving as Envoy
// Gateway's example extension does, for the e2e tests of Portcullis's
// EnvoyGateway dialect:
//
//   - PostHTTPListenerModify puts a basic_auth filter, with the users of
//     the listener's ListenerContextExample policies, in front of every
//     HTTP connection manager of the listener;
//   - PostRouteModify adds the response header of the route's
//     RouteContextExample policies;
//   - PostTranslateModify adds the cluster "egextension-added";
//   - PostVirtualHostModify answers nil: no change.
package main

import (
	"context"
	"crypto/sha1" //nolint:gosec // Envoy's basic_auth takes {SHA} htpasswd entries only.
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	pb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
)

// AddedCluster is the cluster PostTranslateModify adds.
const AddedCluster = "egextension-added"

type server struct {
	pb.UnimplementedEnvoyGatewayExtensionServer
	log *slog.Logger
}

// policy is the part of an extension resource the hooks read.
type policy struct {
	Kind string `json:"kind"`
	Spec struct {
		Username            string `json:"username"`
		Password            string `json:"password"`
		ResponseHeaderName  string `json:"responseHeaderName"`
		ResponseHeaderValue string `json:"responseHeaderValue"`
	} `json:"spec"`
}

func decode(rs []*pb.ExtensionResource) ([]policy, error) {
	out := make([]policy, 0, len(rs))
	for _, r := range rs {
		var p policy
		if err := json.Unmarshal(r.GetUnstructuredBytes(), &p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *server) PostRouteModify(_ context.Context, req *pb.PostRouteModifyRequest) (*pb.PostRouteModifyResponse, error) {
	ps, err := decode(req.GetPostRouteContext().GetExtensionPolicies())
	if err != nil {
		return nil, err
	}
	rt := req.GetRoute()
	changed := false
	for _, p := range ps {
		if p.Kind != "RouteContextExample" || p.Spec.ResponseHeaderName == "" {
			continue
		}
		rt.ResponseHeadersToAdd = append(rt.ResponseHeadersToAdd, &corev3.HeaderValueOption{
			Header: &corev3.HeaderValue{Key: p.Spec.ResponseHeaderName, Value: p.Spec.ResponseHeaderValue}})
		changed = true
	}
	s.log.Info("PostRouteModify", "route", rt.GetName(), "changed", changed)
	if !changed {
		return &pb.PostRouteModifyResponse{}, nil
	}
	return &pb.PostRouteModifyResponse{Route: rt}, nil
}

func (s *server) PostVirtualHostModify(context.Context, *pb.PostVirtualHostModifyRequest) (*pb.PostVirtualHostModifyResponse, error) {
	return &pb.PostVirtualHostModifyResponse{}, nil
}

func (s *server) PostHTTPListenerModify(_ context.Context, req *pb.PostHTTPListenerModifyRequest) (*pb.PostHTTPListenerModifyResponse, error) {
	ps, err := decode(req.GetPostListenerContext().GetExtensionResources())
	if err != nil {
		return nil, err
	}
	var users []string
	for _, p := range ps {
		if p.Kind == "ListenerContextExample" && p.Spec.Username != "" {
			sum := sha1.Sum([]byte(p.Spec.Password)) //nolint:gosec // see the import
			users = append(users, p.Spec.Username+":{SHA}"+base64.StdEncoding.EncodeToString(sum[:]))
		}
	}
	l := req.GetListener()
	s.log.Info("PostHTTPListenerModify", "listener", l.GetName(), "users", len(users))
	if len(users) == 0 {
		return &pb.PostHTTPListenerModifyResponse{}, nil
	}
	ba, err := anypb.New(&basicauthv3.BasicAuth{
		Users:                 &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: strings.Join(users, "\n")}},
		ForwardUsernameHeader: "X-Example-Ext",
	})
	if err != nil {
		return nil, err
	}
	for _, fc := range append(l.GetFilterChains(), l.GetDefaultFilterChain()) {
		for _, f := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(hcm) != nil {
				continue
			}
			hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "envoy.filters.http.basic_auth",
				ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: ba}}}, hcm.HttpFilters...)
			a, err := anypb.New(hcm)
			if err != nil {
				return nil, err
			}
			f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
		}
	}
	return &pb.PostHTTPListenerModifyResponse{Listener: l}, nil
}

func (s *server) PostTranslateModify(_ context.Context, req *pb.PostTranslateModifyRequest) (*pb.PostTranslateModifyResponse, error) {
	s.log.Info("PostTranslateModify", "clusters", len(req.GetClusters()), "policies", len(req.GetPostTranslateContext().GetExtensionResources()))
	added := &clusterv3.Cluster{Name: AddedCluster, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	return &pb.PostTranslateModifyResponse{Clusters: append(req.GetClusters(), added), Secrets: req.GetSecrets()}, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:5005", "address of the gRPC server")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	pb.RegisterEnvoyGatewayExtensionServer(s, &server{log: log})
	log.Info("serving", "address", lis.Addr().String())
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
