package translator

import (
	"reflect"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestExtAuthz(t *testing.T) {
	grpc := func(timeout time.Duration) *extauthzv3.ExtAuthz_GrpcService {
		return &extauthzv3.ExtAuthz_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "extension/auth/authz", Authority: "authz.auth"}},
			Timeout:         durationpb.New(timeout),
			RetryPolicy:     extensionRetryPolicy(&timeout),
		}}
	}
	base := func(timeout time.Duration) *extauthzv3.ExtAuthz {
		return &extauthzv3.ExtAuthz{
			Services:               grpc(timeout),
			TransportApiVersion:    corev3.ApiVersion_V3,
			IncludePeerCertificate: true,
			ValidateMutations:      true,
		}
	}
	for _, tc := range []struct {
		name string
		in   ir.ExtAuth
		want *extauthzv3.ExtAuthz
	}{
		{"a zero timeout is written (none), not left to Envoy's 200ms", ir.ExtAuth{}, base(0)},
		{"timeout and fail open", ir.ExtAuth{Timeout: time.Second, FailOpen: true}, func() *extauthzv3.ExtAuthz {
			c := base(time.Second)
			c.FailureModeAllow = true
			return c
		}()},
		{"request body", ir.ExtAuth{WithRequestBody: &ir.BufferSettings{MaxRequestBytes: 1024, AllowPartialMessage: true, PackAsBytes: true}},
			func() *extauthzv3.ExtAuthz {
				c := base(0)
				c.WithRequestBody = &extauthzv3.BufferSettings{MaxRequestBytes: 1024, AllowPartialMessage: true, PackAsBytes: true}
				return c
			}()},
		{"an HTTP server without settings: the same filter, its http_service", ir.ExtAuth{Timeout: time.Second, FailOpen: true, HTTP: &ir.HTTPAuthService{}},
			func() *extauthzv3.ExtAuthz {
				c := base(0)
				c.FailureModeAllow = true
				c.Services = &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
					Uri: "http://authz.auth", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "extension/auth/authz"}, Timeout: durationpb.New(time.Second)}}}
				return c
			}()},
		{"an HTTP server's settings", ir.ExtAuth{HTTP: &ir.HTTPAuthService{PathPrefix: "/auth",
			AllowedAuthorizationHeaders: []ir.NameMatch{{Kind: "exact", Value: "x-token"}, {Kind: "suffix", Value: "-id", IgnoreCase: true}},
			AllowedUpstreamHeaders:      []ir.NameMatch{{Kind: "prefix", Value: "x-auth-"}, {Kind: "contains", Value: "tenant"}}}},
			func() *extauthzv3.ExtAuthz {
				c := base(0)
				c.Services = &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{
					ServerUri: &corev3.HttpUri{
						Uri: "http://authz.auth", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "extension/auth/authz"}, Timeout: durationpb.New(0)},
					PathPrefix: "/auth",
					AuthorizationResponse: &extauthzv3.AuthorizationResponse{AllowedUpstreamHeaders: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{
						{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "x-auth-"}},
						{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "tenant"}},
					}}},
				}}
				c.AllowedHeaders = &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{
					{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x-token"}},
					{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "-id"}, IgnoreCase: true},
				}}
				return c
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Cluster, in.Authority = "extension/auth/authz", "authz.auth"
			if got := extAuthz(&in); !proto.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestExtAuthzPerRoute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route ir.Route
		want  *extauthzv3.ExtAuthzPerRoute
	}{
		{"disabled", ir.Route{AuthDisabled: true, AuthContext: map[string]string{"k": "v"}},
			&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}},
		{"enabled with the route's context", ir.Route{AuthContext: map[string]string{"k": "v"}},
			&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{ContextExtensions: map[string]string{"k": "v"}}}}},
		{"enabled without context: still set, so the route is checked", ir.Route{},
			&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{}}}},
		{"a route with its own authorization: the HCM's is off", ir.Route{Auth: &ir.ExtAuth{Cluster: "extension/auth/other"}, AuthContext: map[string]string{"k": "v"}},
			&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, packed := (extAuthzFilter{}).perRoute(&tc.route)
			got := &extauthzv3.ExtAuthzPerRoute{}
			if err := packed.(*anypb.Any).UnmarshalTo(got); err != nil {
				t.Fatal(err)
			}
			if name != ExtAuthzFilterName || !proto.Equal(got, tc.want) {
				t.Errorf("got %s: %v, want %s: %v", name, got, ExtAuthzFilterName, tc.want)
			}
		})
	}
}

// TestExtAuthzKeyCoversExtAuth: the shared ext_authz filter is keyed by
// what extAuthz reads; a field added to ir.ExtAuth must be added to the
// key (or here, if the filter does not read it), or two hosts that
// differ in it would share one filter.
func TestExtAuthzKeyCoversExtAuth(t *testing.T) {
	notRead := map[string]bool{"HTTP": true, "Origins": true} // HTTP ones are not shared
	inKey := map[string]bool{"Cluster": true, "Authority": true, "Timeout": true, "FailOpen": true, "WithRequestBody": true}
	ty := reflect.TypeFor[ir.ExtAuth]()
	for i := range ty.NumField() {
		if f := ty.Field(i).Name; !notRead[f] && !inKey[f] {
			t.Errorf("ir.ExtAuth.%s is neither in extAuthzKey nor known not to shape the filter", f)
		}
	}
	a := &ir.ExtAuth{Cluster: "extension/ns/auth", Timeout: time.Second}
	b := *a
	b.FailOpen = true
	fa := extAuthzFilter{}.httpFilters(hcmSettings{auth: a})[0]
	fb := extAuthzFilter{}.httpFilters(hcmSettings{auth: &b})[0]
	if fa == fb || proto.Equal(fa, fb) {
		t.Error("two authorizations that differ in failOpen share one filter")
	}
	if again := (extAuthzFilter{}).httpFilters(hcmSettings{auth: &ir.ExtAuth{Cluster: a.Cluster, Timeout: a.Timeout}})[0]; again != fa {
		t.Error("equal authorizations were packed twice")
	}
}
