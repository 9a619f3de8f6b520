package pipeline_test

import (
	"path/filepath"
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

func proxy(ns, name string) string {
	return objects.Ref{Kind: objects.KindHTTPProxy, Namespace: ns, Name: name}.String()
}

func extension(ns, name string) string {
	return objects.Ref{Kind: objects.KindExtensionService, Namespace: ns, Name: name}.String()
}

// runFiles runs objects read from paths with the default options.
func runFiles(t *testing.T, paths ...string) *pipeline.Result {
	t.Helper()
	set, _, err := file.Load(paths)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Run(set, pipeline.DefaultOptions())
}

// TestIndexObjects: a rejection of a resource is blamed on the objects the
// IR says it came from, through the translator's index.
func TestIndexObjects(t *testing.T) {
	includes := runFiles(t, "testdata/common", "testdata/includes/in.yaml", "testdata/auth-policy-routes/in.yaml")
	merged := runFiles(t, "testdata/common", "testdata/tls-secrets/in.yaml")
	_, extproc := runPipeline(t, "testdata/global-ext-proc-rules")
	ep := func(name string) string { return proxy("extproc-test", name) }
	_, policies := runPipeline(t, "testdata/gateway-policies-attachment")
	policy := func(name string) string {
		return objects.Ref{Kind: objects.KindExtAuthPolicy, Namespace: "default", Name: name}.String()
	}
	tests := []struct {
		name    string
		res     *pipeline.Result
		typeURL string
		names   []string
		message string
		want    []string // among the result
		none    []string // not among it
		exact   bool     // want is the whole result
	}{
		{name: "a route's cluster: the proxies that route to it", res: includes, typeURL: resourcev3.ClusterType, names: []string{"service/team-a/api/8080"},
			want: []string{proxy("team-a", "api")}, none: []string{proxy("default", "root")}},
		{name: "an included proxy's virtual host: the root and the child", res: includes, typeURL: resourcev3.RouteType, names: []string{translator.HTTPRouteConfigName}, message: "virtual host root.example.com: bad",
			want: []string{proxy("default", "root"), proxy("team-a", "api")}, none: []string{proxy("team-a", "broken-child")}},
		{name: "an extension cluster: the ExtensionService and the proxies using it", res: includes, typeURL: resourcev3.ClusterType, names: []string{"extension/default/auth"},
			want: []string{extension("default", "auth"), proxy("default", "protected"), proxy("default", "default-off")}},
		{name: "unknown resources: nobody", res: includes, typeURL: resourcev3.ClusterType, names: []string{"no/such/cluster"}, exact: true},
		{name: "a merged Envoy virtual host: every host it serves", res: merged, typeURL: resourcev3.RouteType, names: []string{translator.HTTPRouteConfigName}, message: "virtual host delegated.example.com: bad",
			want: []string{proxy("default", "mtls"), proxy("team-a", "delegated")}, exact: true},
		{name: "the fallback certificate: the proxies that enable it", res: extproc, typeURL: resourcev3.SecretType, names: []string{"certs/shared-cert"},
			want: []string{ep("fallback")}, none: []string{ep("tls-own")}},
		{name: "a host's processor cluster: the proxies whose processor uses it", res: extproc, typeURL: resourcev3.ClusterType, names: []string{"extension/extproc-test/extproc-extsvc2"},
			want: []string{ep("tls-own"), ep("tls-long"), ep("tls-infinite")}, none: []string{ep("fallback")}},
		{name: "a route's processor cluster: the proxy whose route overrides it", res: extproc, typeURL: resourcev3.ClusterType, names: []string{"extension/extproc-test/extproc-extsvc3"},
			want: []string{ep("http-inherit")}, none: []string{ep("tls-own")}},
		{name: "a Gateway host's routes: the policies applied to them", res: policies, typeURL: resourcev3.RouteType, names: []string{translator.HTTPRouteConfigName}, message: "virtual host shop.example.com: bad",
			want: []string{policy("shop-auth"), policy("shop-health-off")}, none: []string{policy("listener-auth"), policy("shop-health-younger")}},
		{name: "a TLS Gateway host's listener: the policy of its HCM's filter", res: policies, typeURL: resourcev3.ListenerType, names: []string{translator.HTTPSListenerName}, message: "secure.example.com: bad",
			want: []string{policy("gateway-auth")}, none: []string{policy("shop-auth")}},
		{name: "a policy's server cluster: the policies using it", res: policies, typeURL: resourcev3.ClusterType, names: []string{"extension/projectcontour-auth/policy-auth"},
			want: []string{policy("gateway-auth"), policy("shop-auth"), extension("projectcontour-auth", "policy-auth")}, none: []string{policy("shop-health-younger")}},
		{name: "endpoints: as their cluster", res: extproc, typeURL: resourcev3.EndpointType, names: []string{"extension/extproc-test/extproc-extsvc3"},
			want: []string{ep("http-inherit")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range tt.res.Resources.Index.Objects(tt.typeURL, tt.names, tt.message) {
				got = append(got, r.String())
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("objects = %v, want %s among them", got, w)
				}
			}
			for _, w := range tt.none {
				if slices.Contains(got, w) {
					t.Errorf("objects = %v, want no %s", got, w)
				}
			}
			if tt.exact && len(got) != len(tt.want) {
				t.Errorf("objects = %v, want only %v", got, tt.want)
			}
		})
	}
}

// TestIndexServed tells a rejection of what is still configured (an
// operator must look) from one of resources deleted since (Envoy's next
// answer settles it).
func TestIndexServed(t *testing.T) {
	idx := runFiles(t, "testdata/common", "testdata/includes/in.yaml").Resources.Index
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
		if got := idx.Served(tc.typeURL, tc.names); got != tc.want {
			t.Errorf("Served(%s, %v) = %v, want %v", tc.typeURL, tc.names, got, tc.want)
		}
	}
}

// TestIndexHoldsEveryResource: every resource of every golden case is in
// the index, so a rejection of any is attributed (or known as served).
func TestIndexHoldsEveryResource(t *testing.T) {
	dirs, err := goldencase.Runnable("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		_, res := runPipeline(t, dir)
		r := res.Resources
		for typeURL, ms := range map[string][]proto.Message{resourcev3.ListenerType: r.Listeners, resourcev3.RouteType: r.Routes,
			resourcev3.ClusterType: r.Clusters, resourcev3.EndpointType: r.Endpoints, resourcev3.SecretType: r.Secrets} {
			for _, m := range ms {
				if name := translator.ResourceName(m); !r.Index.Served(typeURL, []string{name}) {
					t.Errorf("%s: %s %s is not in the index", filepath.Base(dir), typeURL, name)
				}
			}
		}
	}
}
