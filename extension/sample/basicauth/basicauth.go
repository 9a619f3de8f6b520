// Package basicauth is the sample Portcullis extension: HTTP Basic
// authentication on the routes that reference a BasicAuthFilter, checked by
// a Portcullis `authserver htpasswd` through Envoy's ext_authz filter.
//
// Each hook it implements is the documented example of its hook:
//
//   - PostTranslateInsert adds the auth server's cluster (ClusterName).
//   - PostHTTPListenerModify adds an ext_authz filter (FilterName),
//     disabled, to every HTTP connection manager of the listener.
//   - PostRouteModify enables that filter on a route whose rule references
//     a BasicAuthFilter (ExtAuthzPerRoute with the realm and the route's
//     context), unless the BasicAuthFilter is disabled.
//
// PostVirtualHostModify, PostTranslateModify and PostClusterModify are the
// SDK's pass-through answers (sdk.Server): the extension does not register
// them (see README.md), and answers them with their input if called.
//
// Every answer is a function of its request and of the Config only:
// Portcullis reuses the last answer for an identical request.
package basicauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// Names of what the extension adds to the Envoy configuration. Both differ
// from every name Portcullis uses (its ext_authz filters are named
// envoy.filters.http.ext_authz and envoy.filters.http.ext_authz/...; its
// clusters have no "basicauth-extension/" prefix).
const (
	// FilterName is the ext_authz filter's name in the HTTP connection
	// managers and its key in a route's typed_per_filter_config.
	FilterName = "basicauth-extension.ext_authz"
	// ClusterName is the auth server's cluster.
	ClusterName = "basicauth-extension/authserver"
)

// ConnectTimeout is the connect timeout of the auth server's cluster.
const ConnectTimeout = 2 * time.Second

// DefaultTimeout is the default Config.Timeout: the htpasswd server's
// first check of a user runs bcrypt (tens of milliseconds, more on a busy
// node); later checks are cache hits.
const DefaultTimeout = 2 * time.Second

// Config is what the extension needs to know.
type Config struct {
	// AuthServer is host:port of the `authserver htpasswd` gRPC server
	// (plaintext HTTP/2). An IP address gives a STATIC cluster, a host
	// name a STRICT_DNS one.
	AuthServer string
	// Timeout is Envoy's deadline for one check (ext_authz grpc_service
	// timeout); a check that takes longer is denied (403).
	Timeout time.Duration
}

// Extension is the BasicAuthFilter extension server. Serve it with
// sdk.Serve.
type Extension struct {
	sdk.Server

	cluster *clusterv3.Cluster
	filter  *hcmv3.HttpFilter
}

var _ v1alpha1.ExtensionServerServer = (*Extension)(nil)

// New returns the extension for cfg, or an error if cfg is invalid.
func New(cfg Config) (*Extension, error) {
	cluster, err := authCluster(cfg.AuthServer)
	if err != nil {
		return nil, fmt.Errorf("auth server: %w", err)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("auth server timeout: %v is not positive", cfg.Timeout)
	}
	filter, err := authFilter(cfg.Timeout)
	if err != nil {
		return nil, err
	}
	for _, m := range []interface{ ValidateAll() error }{cluster, filter} {
		if err := m.ValidateAll(); err != nil {
			return nil, fmt.Errorf("auth server: %w", err)
		}
	}
	return &Extension{cluster: cluster, filter: filter}, nil
}

// PostTranslateInsert adds the auth server's cluster.
func (e *Extension) PostTranslateInsert(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
	return &v1alpha1.PostTranslateInsertResponse{Clusters: []*clusterv3.Cluster{proto.Clone(e.cluster).(*clusterv3.Cluster)}}, nil
}

// PostHTTPListenerModify adds the ext_authz filter, disabled, to every HTTP
// connection manager of the listener (of every filter chain and of the
// default chain), unless it is there already, so that calling it again on
// its own answer changes nothing.
//
// Where: right after the ext_authz filters at the front of the list
// (Portcullis's own authorization, which Portcullis puts first), so
// before Portcullis's ext_proc filters and the router. A request the
// platform's authorization refuses never reaches the htpasswd server, and
// an external processor only sees authenticated requests.
func (e *Extension) PostHTTPListenerModify(_ context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
	l := req.GetListener()
	chains := l.GetFilterChains()
	if l.GetDefaultFilterChain() != nil {
		chains = append(chains[:len(chains):len(chains)], l.GetDefaultFilterChain())
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if err := e.addFilter(f); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "listener %s: filter %s: %v", l.GetName(), f.GetName(), err)
			}
		}
	}
	return &v1alpha1.PostHTTPListenerModifyResponse{Listener: l}, nil
}

// addFilter adds the ext_authz filter to f if f is an HTTP connection
// manager without it.
func (e *Extension) addFilter(f *listenerv3.Filter) error {
	tc := f.GetTypedConfig()
	hcm := &hcmv3.HttpConnectionManager{}
	if tc == nil || !tc.MessageIs(hcm) {
		return nil // not an HCM (or one by ECDS, which Portcullis does not make)
	}
	if err := tc.UnmarshalTo(hcm); err != nil {
		return err
	}
	at := 0
	for i, hf := range hcm.GetHttpFilters() {
		if hf.GetName() == FilterName {
			return nil // already there
		}
		if at == i && hf.GetTypedConfig().MessageIs(&extauthzv3.ExtAuthz{}) {
			at = i + 1
		}
	}
	filters := make([]*hcmv3.HttpFilter, 0, len(hcm.HttpFilters)+1)
	filters = append(filters, hcm.HttpFilters[:at]...)
	filters = append(filters, proto.Clone(e.filter).(*hcmv3.HttpFilter))
	hcm.HttpFilters = append(filters, hcm.HttpFilters[at:]...)
	a, err := marshalAny(hcm)
	if err != nil {
		return err
	}
	f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	return nil
}

// PostRouteModify enables the ext_authz filter on the route, with the
// BasicAuthFilter's realm and context and the route's origin as the check's
// context_extensions; the rest of the route is unchanged. A disabled
// BasicAuthFilter leaves the route unchanged: the filter stays disabled
// there, as in the HCM, and requests are not authenticated.
//
// A rule references one BasicAuthFilter. Several are an error
// (InvalidArgument), as is an invalid one: Portcullis reports it as an
// ExtensionError on the route's object.
func (e *Extension) PostRouteModify(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
	r := req.GetRoute()
	rc := req.GetContext()
	where := fmt.Sprintf("%s %s/%s rule %d", rc.GetRouteKind(), rc.GetRouteNamespace(), rc.GetRouteName(), rc.GetRuleIndex())
	if r == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the request has no route", where)
	}
	var filters []*Filter
	for _, res := range req.GetExtensionResources() {
		f, err := decode(res)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: invalid BasicAuthFilter: %v", where, err)
		}
		filters = append(filters, f)
	}
	switch {
	case len(filters) == 0:
		return nil, status.Errorf(codes.InvalidArgument, "%s: no BasicAuthFilter in the request", where)
	case len(filters) > 1:
		return nil, status.Errorf(codes.InvalidArgument, "%s: references %d BasicAuthFilters (%s, %s, ...): a rule may reference one",
			where, len(filters), filters[0].ref(), filters[1].ref())
	}
	f := filters[0]
	if f.Spec.Disabled {
		return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
	}
	ctxExt := make(map[string]string, len(f.Spec.Context)+3)
	for k, v := range f.Spec.Context {
		ctxExt[k] = v
	}
	if f.Spec.Realm != "" {
		ctxExt[RealmKey] = f.Spec.Realm
	}
	ctxExt[RouteKey] = rc.GetRouteKind() + "/" + rc.GetRouteNamespace() + "/" + rc.GetRouteName()
	ctxExt[FilterKey] = f.ref()
	a, err := marshalAny(&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{
		CheckSettings: &extauthzv3.CheckSettings{ContextExtensions: ctxExt},
	}})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", where, err)
	}
	if r.TypedPerFilterConfig == nil {
		r.TypedPerFilterConfig = map[string]*anypb.Any{}
	}
	r.TypedPerFilterConfig[FilterName] = a
	return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
}

// authCluster is the auth server's cluster: HTTP/2 (gRPC) in plaintext.
func authCluster(hostPort string) (*clusterv3.Cluster, error) {
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, fmt.Errorf("%q: %w (want host:port)", hostPort, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("%q: bad port %q", hostPort, portStr)
	}
	if host == "" {
		return nil, fmt.Errorf("%q: no host", hostPort)
	}
	typ := clusterv3.Cluster_STRICT_DNS
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return nil, fmt.Errorf("%q: an IPv6 zone is not supported", hostPort)
		}
		typ = clusterv3.Cluster_STATIC
		host = ip.String()
	}
	opts, err := marshalAny(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}},
	})
	if err != nil {
		return nil, err
	}
	return &clusterv3.Cluster{
		Name:                 ClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: typ},
		ConnectTimeout:       durationpb.New(ConnectTimeout),
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": opts,
		},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: ClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{{
					HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
						Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
							Address:       host,
							PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
						}}},
					}},
				}},
			}},
		},
	}, nil
}

// authFilter is the HCM entry of the ext_authz filter: disabled, so that
// only the routes PostRouteModify enables it on are checked. Like
// Portcullis's own: gRPC, API v3, fail closed, mutations validated.
func authFilter(timeout time.Duration) (*hcmv3.HttpFilter, error) {
	a, err := marshalAny(&extauthzv3.ExtAuthz{
		Services: &extauthzv3.ExtAuthz_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: ClusterName}},
			Timeout:         durationpb.New(timeout),
		}},
		TransportApiVersion: corev3.ApiVersion_V3,
		ValidateMutations:   true,
	})
	if err != nil {
		return nil, err
	}
	return &hcmv3.HttpFilter{
		Name:       FilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a},
		Disabled:   true,
	}, nil
}

// marshalAny is anypb.New with deterministic encoding (map order), so that
// equal answers are equal bytes.
func marshalAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, errors.New("encoding " + string(m.ProtoReflect().Descriptor().FullName()) + ": " + err.Error())
	}
	return a, nil
}
