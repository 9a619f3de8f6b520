package extdiff

import (
	"encoding/base64"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

const vendorFilterURL = "type.googleapis.com/vendor.example.Filter"

var vendorBytes = []byte("\x0a\x0csecret-realm")

// listenerWith is a listener whose HTTP connection manager (in an Any)
// has the given HTTP filters.
func listenerWith(t *testing.T, name string, filters ...*hcmv3.HttpFilter) *listenerv3.Listener {
	t.Helper()
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: "http", HttpFilters: filters})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{Name: name, FilterChains: []*listenerv3.FilterChain{{
		Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}},
	}}}
}

// An extension's filter of a type this binary does not link shows in the
// diff (its type URL and bytes) instead of failing it, changed, added or
// in a virtual host.
func TestDiffUnknownTypes(t *testing.T) {
	vendor := &hcmv3.HttpFilter{Name: "vendor", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: vendorFilterURL, Value: vendorBytes}}}
	router := &hcmv3.HttpFilter{Name: "envoy.filters.http.router"}
	vh := &routev3.VirtualHost{Name: "v", Domains: []string{"*"}}
	vh2 := proto.Clone(vh).(*routev3.VirtualHost)
	vh2.TypedPerFilterConfig = map[string]*anypb.Any{"vendor": {TypeUrl: vendorFilterURL, Value: vendorBytes}}
	b64 := base64.StdEncoding.EncodeToString(vendorBytes)
	cases := []struct {
		name          string
		before, after translator.Resources
		resource      string
		op            Op
		want          []string
	}{{
		name:     "filter added to a listener's HCM",
		before:   translator.Resources{Listeners: []proto.Message{listenerWith(t, "http", router)}},
		after:    translator.Resources{Listeners: []proto.Message{listenerWith(t, "http", vendor, router)}},
		resource: `Listener "http"`, op: Changed,
		want: []string{"+      - name: vendor", "+          '@type': " + vendorFilterURL, "+          unknownTypeBytes: " + b64},
	}, {
		name:     "listener added",
		after:    translator.Resources{Listeners: []proto.Message{listenerWith(t, "new", vendor)}},
		resource: `Listener "new"`, op: Added,
		want: []string{"'@type': " + vendorFilterURL, "unknownTypeBytes: " + b64},
	}, {
		name:     "virtual host's typed_per_filter_config",
		before:   translator.Resources{Routes: []proto.Message{&routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{vh}}}},
		after:    translator.Resources{Routes: []proto.Message{&routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{vh2}}}},
		resource: `virtual host "v" of RouteConfiguration "rc"`, op: Changed,
		want: []string{"+typedPerFilterConfig:", "+    '@type': " + vendorFilterURL, "+    unknownTypeBytes: " + b64},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Diff(&c.before, &c.after)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Resource != c.resource || got[0].Op != c.op {
				t.Fatalf("changes %+v, want one %s of %s", got, c.op, c.resource)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0].Text, w) {
					t.Errorf("lacks %q:\n%s", w, got[0].Text)
				}
			}
		})
	}
}
