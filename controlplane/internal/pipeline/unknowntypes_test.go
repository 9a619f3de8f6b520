package pipeline_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

const (
	vendorFilterURL = "type.googleapis.com/vendor.example.Filter"
	// Not linked into Portcullis (the test checks it stays unknown).
	basicAuthURL = "type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth"
)

// vendorBytes are a valid encoding of a message Portcullis does not know
// (field 1, a string); notWire are bytes that are no protobuf encoding.
var (
	vendorBytes = protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "secret-realm")
	notWire     = []byte{0xff, 0xff, 0xff}
)

// hcmListener is a listener whose HTTP connection manager (itself in an
// Any) has the router and then a filter of each type URL given.
func hcmListener(t *testing.T, filters ...*anypb.Any) *listenerv3.Listener {
	t.Helper()
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	h := &hcmv3.HttpConnectionManager{StatPrefix: "http"}
	for i, f := range filters {
		h.HttpFilters = append(h.HttpFilters, &hcmv3.HttpFilter{Name: "vendor." + string(rune('a'+i)), ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: f}})
	}
	h.HttpFilters = append(h.HttpFilters, &hcmv3.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}})
	hcm, err := anypb.New(h)
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{Name: "http", FilterChains: []*listenerv3.FilterChain{{
		Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}},
	}}}
}

// unknownJSON is how an Any of an unknown type renders.
func unknownJSON(url string, value []byte) string {
	if len(value) == 0 {
		return `{"@type":"` + url + `"}`
	}
	return `{"@type":"` + url + `","unknownTypeBytes":"` + base64.StdEncoding.EncodeToString(value) + `"}`
}

// An Any whose type this binary does not link (an extension server's
// filter) renders as its type URL and its bytes, wherever it is, nested
// in a known Any or not; known types around it render as before, and the
// resource itself is left as it was.
func TestMarshalResourceUnknownTypes(t *testing.T) {
	if _, err := protoregistry.GlobalTypes.FindMessageByURL(basicAuthURL); err == nil {
		t.Fatalf("%s is linked: pick another type for this test", basicAuthURL)
	}
	cases := []struct {
		name string
		m    proto.Message
		want []string
	}{{
		name: "HTTP filter in the HCM's Any",
		m:    hcmListener(t, &anypb.Any{TypeUrl: vendorFilterURL, Value: vendorBytes}),
		want: []string{
			`"httpFilters":[{"name":"vendor.a","typedConfig":` + unknownJSON(vendorFilterURL, vendorBytes) + `}`,
			`"typedConfig":{"@type":"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}`,
			`"@type":"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager","statPrefix":"http"`,
		},
	}, {
		name: "Envoy type not linked, bytes that are no protobuf, empty value",
		m: hcmListener(t,
			&anypb.Any{TypeUrl: basicAuthURL, Value: vendorBytes},
			&anypb.Any{TypeUrl: "example.com/not.Wire", Value: notWire},
			&anypb.Any{TypeUrl: vendorFilterURL}),
		want: []string{
			unknownJSON(basicAuthURL, vendorBytes),
			unknownJSON("example.com/not.Wire", notWire),
			`"name":"vendor.c","typedConfig":` + unknownJSON(vendorFilterURL, nil),
		},
	}, {
		name: "typed_per_filter_config of a route",
		m: &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{
			Name: "v", Domains: []string{"*"},
			TypedPerFilterConfig: map[string]*anypb.Any{"vendor.a": {TypeUrl: vendorFilterURL, Value: vendorBytes}},
		}}},
		want: []string{`"typedPerFilterConfig":{"vendor.a":` + unknownJSON(vendorFilterURL, vendorBytes) + `}`},
	}, {
		name: "cluster protocol options",
		m: &clusterv3.Cluster{Name: "c", TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"vendor.a": {TypeUrl: vendorFilterURL, Value: notWire},
		}},
		want: []string{`"typedExtensionProtocolOptions":{"vendor.a":` + unknownJSON(vendorFilterURL, notWire) + `}`},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := proto.Clone(c.m)
			got, err := pipeline.MarshalResource(c.m)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			for _, w := range c.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("lacks %s:\n%s", w, got)
				}
			}
			if !proto.Equal(before, c.m) {
				t.Error("the resource changed")
			}
		})
	}
}

// translate's document (-o json and -o yaml) renders a listener an
// extension gave an unknown filter.
func TestDocumentUnknownTypes(t *testing.T) {
	res := pipeline.Run(&objects.Set{}, pipeline.DefaultOptions())
	res.Resources.Listeners = append(res.Resources.Listeners, hcmListener(t, &anypb.Any{TypeUrl: vendorFilterURL, Value: vendorBytes}))
	d, err := pipeline.NewDocument(&objects.Set{}, res, metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "yaml"} {
		b, err := d.Encode(format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		j := b
		if format == "yaml" {
			if j, err = yaml.YAMLToJSON(b); err != nil {
				t.Fatalf("yaml: %v", err)
			}
		}
		var doc struct {
			XDS struct {
				Listeners []json.RawMessage `json:"listeners"`
			} `json:"xds"`
		}
		if err := json.Unmarshal(j, &doc); err != nil || len(doc.XDS.Listeners) == 0 {
			t.Fatalf("%s: %v %s", format, err, b)
		}
		last := string(doc.XDS.Listeners[len(doc.XDS.Listeners)-1])
		for _, w := range []string{vendorFilterURL, base64.StdEncoding.EncodeToString(vendorBytes)} {
			if !strings.Contains(last, w) {
				t.Errorf("%s: the listener lacks %s:\n%s", format, w, last)
			}
		}
	}
}
