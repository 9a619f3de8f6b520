package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

func TestAttribution(t *testing.T) {
	set, _, err := file.Load([]string{"testdata/common", "testdata/includes/in.yaml", "testdata/auth-policy-routes/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(set, pipeline.Options{Translator: translator.DefaultOptions()})
	attr := pipeline.NewAttribution(res)

	proxy := func(ns, name string) string {
		return objects.Ref{Kind: "HTTPProxy", Namespace: ns, Name: name}.String()
	}
	ext := func(ns, name string) string {
		return objects.Ref{Kind: "ExtensionService", Namespace: ns, Name: name}.String()
	}
	tests := []struct {
		name     string
		typeURL  string
		names    []string
		message  string
		want     []string // a subset of the result, in order
		wantNone []string
	}{
		{"a route's cluster is blamed on the proxies that route to it", resourcev3.ClusterType, []string{"service/team-a/api/8080"}, "",
			[]string{proxy("team-a", "api")}, []string{proxy("default", "root")}},
		{"an included proxy's virtual host is blamed on the root and the child", resourcev3.RouteType, []string{translator.HTTPRouteConfigName}, "virtual host root.example.com: bad",
			[]string{proxy("default", "root"), proxy("team-a", "api")}, []string{proxy("team-a", "broken-child")}},
		{"an extension cluster is blamed on the ExtensionService and the proxies using it", resourcev3.ClusterType, []string{"extension/default/auth"}, "",
			[]string{ext("default", "auth"), proxy("default", "protected"), proxy("default", "default-off")}, nil},
		{"unknown resources are blamed on nobody", resourcev3.ClusterType, []string{"no/such/cluster"}, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range attr.Objects(tt.typeURL, tt.names, tt.message) {
				got = append(got, r.String())
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("objects = %v, want %s among them", got, w)
				}
			}
			for _, w := range tt.wantNone {
				if slices.Contains(got, w) {
					t.Errorf("objects = %v, want no %s", got, w)
				}
			}
			if tt.want == nil && len(got) > 0 {
				t.Errorf("objects = %v, want none", got)
			}
		})
	}
	if len(res.Build.Sources.VirtualHosts()) == 0 || !strings.Contains(strings.Join(keys(res.Build.Sources.Clusters()), " "), "extension/") {
		t.Errorf("sources = %+v, want virtual hosts and extension clusters", res.Build.Sources)
	}
}

// The fallback certificate and the processors of hosts and routes are
// blamed on the HTTPProxies that use them, not only on their Secret or
// ExtensionService.
func TestAttributionOfFallbackAndProcessors(t *testing.T) {
	_, res := runPipeline(t, "testdata/global-ext-proc-rules")
	attr := pipeline.NewAttribution(res)
	proxy := func(name string) string {
		return objects.Ref{Kind: "HTTPProxy", Namespace: "extproc-test", Name: name}.String()
	}
	for _, tt := range []struct {
		typeURL, name string
		want, none    []string
	}{
		{resourcev3.SecretType, "certs/shared-cert", []string{proxy("fallback")}, []string{proxy("tls-own")}},
		{resourcev3.ClusterType, "extension/extproc-test/extproc-extsvc2", []string{proxy("tls-own"), proxy("tls-long"), proxy("tls-infinite")}, []string{proxy("fallback")}},
		{resourcev3.ClusterType, "extension/extproc-test/extproc-extsvc3", []string{proxy("http-inherit")}, []string{proxy("tls-own")}},
	} {
		var got []string
		for _, r := range attr.Objects(tt.typeURL, []string{tt.name}, "") {
			got = append(got, r.String())
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s %s: objects = %v, want %s among them", tt.typeURL, tt.name, got, w)
			}
		}
		for _, w := range tt.none {
			if slices.Contains(got, w) {
				t.Errorf("%s %s: objects = %v, want no %s", tt.typeURL, tt.name, got, w)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Hosts served by one merged Envoy virtual host (identical routes) are all
// blamed when Envoy names it: its routes are every one of theirs.
func TestAttributionOfMergedVirtualHosts(t *testing.T) {
	set, _, err := file.Load([]string{"testdata/common", "testdata/tls-secrets/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	attr := pipeline.NewAttribution(pipeline.Run(set, pipeline.Options{Translator: translator.DefaultOptions()}))
	var got []string
	for _, r := range attr.Objects(resourcev3.RouteType, []string{translator.HTTPRouteConfigName}, "virtual host delegated.example.com: bad") {
		got = append(got, r.String())
	}
	for _, want := range []objects.Ref{{Kind: "HTTPProxy", Namespace: "team-a", Name: "delegated"}, {Kind: "HTTPProxy", Namespace: "default", Name: "mtls"}} {
		if !slices.Contains(got, want.String()) {
			t.Errorf("objects = %v, want %s among them", got, want)
		}
	}
	if len(got) != 2 {
		t.Errorf("objects = %v, want only the two merged hosts' proxies", got)
	}
}

// Served tells a rejection of what is still configured (an operator must
// look) from one of resources deleted since (Envoy's next answer settles
// it).
func TestAttributionServed(t *testing.T) {
	set, _, err := file.Load([]string{"testdata/common", "testdata/includes/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	attr := pipeline.NewAttribution(pipeline.Run(set, pipeline.Options{Translator: translator.DefaultOptions()}))
	for _, tc := range []struct {
		typeURL string
		names   []string
		want    bool
	}{
		{resourcev3.ClusterType, []string{"service/team-a/api/8080"}, true},
		{resourcev3.EndpointType, []string{"gone", "service/team-a/api/8080"}, true},
		{resourcev3.ListenerType, []string{translator.HTTPListenerName}, true},
		{resourcev3.RouteType, []string{translator.HTTPRouteConfigName}, true},
		{resourcev3.ClusterType, []string{"service/deleted/app/80"}, false},
		{resourcev3.SecretType, []string{"default/deleted"}, false},
		{"type.googleapis.com/unknown", []string{translator.HTTPListenerName}, false},
	} {
		if got := attr.Served(tc.typeURL, tc.names); got != tc.want {
			t.Errorf("Served(%s, %v) = %v, want %v", tc.typeURL, tc.names, got, tc.want)
		}
	}
}
