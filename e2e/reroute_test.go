package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// reroutingProcessor is what a tenant could run as its own processor: it
// rewrites the path to another route of the virtual host and asks Envoy to
// route the request again.
type reroutingProcessor struct {
	sdk.Continue
	to string
}

func (p reroutingProcessor) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	h.Set(":path", p.to)
	x.ClearRouteCache()
	return nil
}

// TestIncludedProxyProcessorCannotRerouteAroundAuthorization: ext_proc runs
// after ext_authz, so a processor that clears the route cache moves an
// already-checked request to another route without a second check. A tenant
// that owns only an included HTTPProxy must not be able to name such a
// processor for its routes: its route (authorization disabled, as a child
// may) would otherwise lead anonymous clients to the root's protected route.
func TestIncludedProxyProcessorCannotRerouteAroundAuthorization(t *testing.T) {
	c := harness.StartComponents(t)
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`globalExtAuth:
  extensionService: %[1]s/auth-h2c
globalExtProc:
  processor:
    grpcService:
      extensionRef: {name: global-proc, namespace: %[1]s}
`, harness.AuthNamespace))
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir, "--config", cfg)
	objects := harness.Dir(dir)

	globalProc := startSDKServer(t, sdk.Continue{})
	evil := startSDKServer(t, reroutingProcessor{to: "/admin/secret"})
	h2c := "h2c"
	ext := func(ns, name string) *v1alpha1.ExtensionService {
		return &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}}
	}
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	objs := []client.Object{ext(harness.AuthNamespace, "auth-h2c"), ext(harness.AuthNamespace, "global-proc"), ext("tenant", "evil")}
	objs = append(objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, "auth-h2c", 9000, harness.Port(t, c.AuthH2C))...)
	objs = append(objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, "global-proc", 9000, harness.Port(t, globalProc))...)
	objs = append(objs, harness.LoopbackEndpointSlice("tenant", "evil", 9000, harness.Port(t, evil))...)
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, c.Echo.Port)...)
	// The tenant's own upstream, told apart from the root's by its name.
	tenantEcho := harness.StartEcho(t, "tenant-echo")
	objs = append(objs, harness.LoopbackEndpointSlice("tenant", "echo", 80, tenantEcho.Port)...)
	objs = append(objs,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "root"},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{Fqdn: "app.example.com"},
				Routes: []contourv1.Route{{
					Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}},
					// The test auth server denies every check of this route.
					AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}},
					Services:   echo,
				}},
				Includes: []contourv1.Include{{Namespace: "tenant", Name: "child", Conditions: []contourv1.MatchCondition{{Prefix: "/tenant"}}}},
			}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "child"},
			Spec: contourv1.HTTPProxySpec{Routes: []contourv1.Route{{
				AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true},
				ExtProcPolicy: &contourv1.ExtProcPolicy{Overrides: &contourv1.ExtProc{
					GRPCService: &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: "tenant", Name: "evil"}},
				}},
				Services: echo,
			}}}},
	)
	if err := objects.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	httpc := harness.HTTPClient(httpAddr)

	// The root's route is served and denied.
	harness.EventuallyStatus(t, httpc, "http://app.example.com/admin/secret", http.StatusForbidden)
	// Through the tenant's route, the request never reaches /admin's
	// upstream unchecked (the path a processor rewrites on its own route is
	// its own business).
	for range 5 {
		e, err := harness.GetEcho(httpc, harness.MustRequest(t, "http://app.example.com/tenant/x"), http.StatusOK)
		if err != nil {
			continue // the tenant's route is refused: fine
		}
		if e.Name != "tenant-echo" {
			t.Fatalf("the tenant's processor moved an anonymous request to the root's /admin route without authorization (upstream %s saw %s, Auth-Handler %q)", e.Name, e.Path, e.Headers.Get("Auth-Handler"))
		}
	}
}
