package extension

import (
	"context"
	"strings"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// Two extensions chain in order: the second sees the first's change; each
// gets only the routes that reference its own kinds; their calls are
// counted under their names; a Closed failure of one withholds the
// result while the other's failures are still reported.
func TestChain(t *testing.T) {
	firstAddr, firstCalls := serve(t, &sdk.Server{RouteModify: routeHeader})
	var secondSaw []string
	secondFails := false
	secondAddr, secondCalls := serve(t, &sdk.Server{
		VirtualHostModify: func(ctx context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			for _, r := range req.GetVirtualHost().GetRoutes() {
				for _, h := range r.GetRequestHeadersToAdd() {
					secondSaw = append(secondSaw, h.GetHeader().GetValue())
				}
			}
			if secondFails {
				return nil, status.Error(codes.Unavailable, "down")
			}
			return vhostHeader(ctx, req)
		},
		RouteModify: func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			if !secondFails {
				t.Error("the second extension got a route that references only the first's kind")
			}
			return nil, status.Error(codes.Internal, "not today")
		},
	})
	first := newRunner(t, Registration{Name: "first", Address: firstAddr, Hooks: []Hook{HookPostRouteModify}})
	quota := schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "Quota"}
	second := newRunner(t, Registration{Name: "second", Address: secondAddr, FailurePolicy: FailOpen,
		Hooks: []Hook{HookPostRouteModify, HookPostVirtualHostModify}, Resources: []schema.GroupVersionKind{quota}})
	chain, err := NewChain(first, second)
	if err != nil {
		t.Fatal(err)
	}

	out, failures := chain.Apply(context.Background(), translate(t, fixtureYAML), refsA)
	if len(failures) > 0 || out == nil {
		t.Fatalf("failures %v", failures)
	}
	if r := vhost(out, "a.example.com").GetRoutes()[0]; !hasHeader(r.GetRequestHeadersToAdd(), "route/retry") {
		t.Errorf("the first extension's change is missing: %v", r)
	}
	if vh := vhost(out, "a.example.com"); !hasHeader(vh.GetRequestHeadersToAdd(), "vhost") {
		t.Errorf("the second extension's change is missing: %v", vh)
	}
	if len(secondSaw) != 1 || secondSaw[0] != "route/retry" {
		t.Errorf("the second extension saw route headers %v, want the first's", secondSaw)
	}
	if firstCalls.get(HookPostRouteModify) != 1 || secondCalls.get(HookPostRouteModify) != 0 {
		t.Errorf("route calls: first %d, second %d", firstCalls.get(HookPostRouteModify), secondCalls.get(HookPostRouteModify))
	}
	if got := testutil.ToFloat64(chain.metric.WithLabelValues("first", string(HookPostRouteModify), string(OutcomeOK))); got != 1 {
		t.Errorf("first's ok route calls = %v, want 1", got)
	}
	if got := testutil.ToFloat64(chain.metric.WithLabelValues("second", string(HookPostVirtualHostModify), string(OutcomeOK))); got != 2 {
		t.Errorf("second's ok virtual host calls = %v, want 2", got)
	}

	// What Envoy would reject of it names the extensions that changed
	// it; what they left alone, none.
	got := chain.Touched(resourcev3.RouteType, translator.HTTPRouteConfigName)
	want := []string{`extension "first" (PostRouteModify)`, `extension "second" (PostRouteModify, PostVirtualHostModify)`}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("Touched(ingress_http) = %v, want %v", got, want)
	}
	if got := chain.Touched(resourcev3.ClusterType, ourCluster); len(got) != 0 {
		t.Errorf("Touched(%s) = %v, want none", ourCluster, got)
	}

	// A route referencing the second's kind goes to the second only.
	refs := Refs{Routes: map[string]*ir.RouteExtension{routeAName: {Kind: "HTTPRoute", Namespace: "default", Name: "a",
		Resources: []ir.ExtensionResource{{Group: "example.vendor.io", Kind: "Quota", JSON: []byte(`{"kind":"Quota"}`)}}}}}
	secondFails = true
	out, failures = chain.Apply(context.Background(), translate(t, fixtureYAML), refs)
	// The second's route call fails, and so does its call for
	// a.example.com, whose route changed (b.example.com's answer is the
	// cached one); it is Open: the result is published without them.
	if out == nil {
		t.Fatal("an Open extension's failure withheld the result")
	}
	for _, f := range failures {
		if f.Extension != "second" || f.Policy != FailOpen {
			t.Errorf("failure %v, want the second's, Open", f)
		}
	}
	if len(failures) != 2 || failures[0].Hook != HookPostRouteModify || failures[1].Hook != HookPostVirtualHostModify {
		t.Errorf("failures %v, want the route's and a.example.com's", failures)
	}
}

func TestNewChainRefusesSharedKinds(t *testing.T) {
	a := newRunner(t, Registration{Name: "a", Address: "127.0.0.1:1", Hooks: []Hook{HookPostRouteModify}})
	b := newRunner(t, Registration{Name: "b", Address: "127.0.0.1:1", Hooks: []Hook{HookPostRouteModify}})
	if _, err := NewChain(a, b); err == nil {
		t.Error("two extensions owning RetryPolicy chained")
	}
}
