package serve

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// vendorFilterURL is a type this binary does not link.
const vendorFilterURL = "type.googleapis.com/vendor.example.Filter"

var vendorFilterBytes = []byte("\x0a\x0csecret-realm")

// vendorFilterExtension puts an HTTP filter of vendorFilterURL first in
// every HTTP connection manager (PostHTTPListenerModify) and a
// typed_per_filter_config of that type on every virtual host
// (PostVirtualHostModify).
func vendorFilterExtension(t *testing.T) string {
	vendor := func() *anypb.Any { return &anypb.Any{TypeUrl: vendorFilterURL, Value: vendorFilterBytes} }
	return sdktest.Listen(t, &sdk.Server{
		HTTPListenerModify: func(_ context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
			l := req.GetListener()
			for _, fc := range l.GetFilterChains() {
				for _, f := range fc.GetFilters() {
					hcm := &hcmv3.HttpConnectionManager{}
					if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
						continue
					}
					hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "vendor.example", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: vendor()}}}, hcm.HttpFilters...)
					a, err := anypb.New(hcm)
					if err != nil {
						return nil, err
					}
					f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
				}
			}
			return &v1alpha1.PostHTTPListenerModifyResponse{Listener: l}, nil
		},
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			vh := req.GetVirtualHost()
			if vh.TypedPerFilterConfig == nil {
				vh.TypedPerFilterConfig = map[string]*anypb.Any{}
			}
			vh.TypedPerFilterConfig["vendor.example"] = vendor()
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
		},
	})
}

// A Gateway and an HTTPRoute, to which the extension adds filters of a
// type Portcullis does not link: they are published as they are, and
// /config and /extensions show them (type URL and bytes) instead of
// answering 500.
func TestAdminUnknownTypes(t *testing.T) {
	s := configuredServer(t, fmt.Sprintf(`
extensions:
- name: vendor
  address: %s
  hooks: [PostHTTPListenerModify, PostVirtualHostModify]
  timeout: 5s
`, vendorFilterExtension(t)))

	var set objects.Set
	if _, err := set.Decode(strings.NewReader(gatewayYAML+`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: web}]
  hostnames: [app.example.com]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`), "test"); err != nil {
		t.Fatal(err)
	}
	set.Sort()
	s.rebuild(t.Context(), &set)

	// What Envoy gets: the extension's Any, untouched.
	_, res := published(s)
	if res == nil {
		_, st := get(t, s, "/status")
		_, ex := get(t, s, "/extensions")
		t.Fatalf("nothing published:\n%s\n%s", st, ex)
	}
	found := false
	for _, m := range res.Listeners {
		for _, fc := range m.(*listenerv3.Listener).GetFilterChains() {
			for _, f := range fc.GetFilters() {
				hcm := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(hcm) != nil {
					continue
				}
				for _, hf := range hcm.GetHttpFilters() {
					if proto.Equal(hf.GetTypedConfig(), &anypb.Any{TypeUrl: vendorFilterURL, Value: vendorFilterBytes}) {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("the published listeners lack the extension's filter")
	}

	b64 := base64.StdEncoding.EncodeToString(vendorFilterBytes)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/config", []string{`"@type": "` + vendorFilterURL + `"`, `"unknownTypeBytes": "` + b64 + `"`, `"name": "vendor.example"`}},
		{"/extensions", []string{
			`changed: Listener "`, `changed: virtual host "app.example.com" of RouteConfiguration`,
			"+          '@type': " + vendorFilterURL, "unknownTypeBytes: " + b64, "0 failures",
		}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, s, tc.path)
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s lacks %q:\n%s", tc.path, w, body)
				}
			}
		})
	}
}
