package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// The conditions of docs/gateway-api-policies.md for opt-outs that are
// refused (controlplane/internal/status/reasons.go).
var (
	overridden       = cond{"Overridden", metav1.ConditionTrue, "OverriddenByPolicy"}
	optOutForbidden  = cond{"Accepted", metav1.ConditionFalse, "OptOutForbidden"}
	optOutReason     = "OptOutForbidden"
	gatewayTargetRef = gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "gw"}}
)

// optOutStack starts the Gateway API stack (with args for the control
// plane), the authserver testserver behind the ExtensionService auth of
// gwNS, an echo upstream "team" and the Gateway gw (listener http, any
// host); it returns the stack, the objects to apply, an HTTP client and
// the harness.SlowPeer between Envoy and the authserver (faithful until
// told otherwise).
func optOutStack(t *testing.T, args ...string) (*gatewayStack, []client.Object, *http.Client, *harness.SlowPeer) {
	t.Helper()
	g := startGatewayStack(t, args...)
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr, authMetricsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	harness.StartProcess(t, "authserver", authserver, "testserver", "--address", authAddr, "--metrics-address", authMetricsAddr)
	waitCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitHTTP(waitCtx, "http://"+authMetricsAddr+"/healthz", 200); err != nil {
		t.Fatalf("authserver testserver not healthy: %v", err)
	}
	peer := harness.StartSlowPeer(t, authAddr)
	team := harness.StartEcho(t, "team")
	h2c := "h2c"
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gwNS}}}
	objs = append(objs, echoService(gwNS, team)...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "authserver", 9443, harness.Port(t, peer.Addr))...)
	objs = append(objs,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "auth"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "authserver", Port: 9443}}}},
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		// Another team's route on the host: / and an Exact /login.
		httpRoute(gwNS, "team", parentRef("gw", "http"), hostnames("team.example.com"),
			namedRule("main", "team"),
			namedRule("login", "team", pathMatch(gwapiv1.PathMatchExact, "/login"))),
	)
	return g, objs, harness.HTTPClient(g.httpAddr), peer
}

// loginOff is the opt-out of the rule login of the HTTPRoute team.
func loginOff() *gatewayv1alpha1.ExtAuthPolicy {
	return &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "login-off"},
		Spec: gatewayv1alpha1.ExtAuthPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{policyTarget("team", "login")}, Disabled: true}}
}

// TestGatewayAPIPolicyOverrides: a Gateway owner's ExtAuthPolicy with
// overrides (GEP-713) cannot be switched off by a route's: the route's
// opt-out of its Exact /login and a route policy's defaults naming no
// deny are Overridden, and /login is still denied (401) by the Gateway's
// server, through a real Envoy. Before overrides existed the opt-out won
// and /login was served unchecked. The overrides' settings are the
// check's, timeout included: with the auth server answering in 3 s (a
// SlowPeer), the overrides' 5 s lets its 401 through, where the route
// policy's 1 s would have failed the check closed (403) at 1 s.
func TestGatewayAPIPolicyOverrides(t *testing.T) {
	g, objs, c, peer := optOutStack(t)
	gatewayAuth := &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "gateway-auth"},
		Spec: gatewayv1alpha1.ExtAuthPolicySpec{
			TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{gatewayTargetRef},
			Overrides: &gatewayv1alpha1.ExtAuthPolicySettings{
				ExtensionServiceRef: &contourv1.ExtensionServiceReference{Name: "auth"},
				ResponseTimeout:     "5s",
				AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{denyKey: "401"}},
			},
		}}
	teamAuth := &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "team-auth"},
		Spec: gatewayv1alpha1.ExtAuthPolicySpec{
			TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{policyTarget("team", "")},
			Defaults:   &gatewayv1alpha1.ExtAuthPolicySettings{ExtensionServiceRef: &contourv1.ExtensionServiceReference{Name: "auth"}, ResponseTimeout: "1s"},
		}}
	off := loginOff()
	g.apply(t, append(objs, gatewayAuth, teamAuth, off)...)

	for _, url := range []string{"http://team.example.com/login", "http://team.example.com/"} {
		a := eventuallyStatus(t, c, http.StatusUnauthorized, "GET", url)
		if a.echo != nil {
			t.Errorf("%s: answered by an upstream: %v", url, a)
		}
	}
	g.eventuallyPolicy(t, off, "team", "login", overridden)
	g.eventuallyPolicy(t, teamAuth, "team", "", overridden)
	g.eventuallyPolicy(t, off, "team", "login", accepted)

	peer.SetFault(harness.Fault{Delay: 3 * time.Second})
	start := time.Now()
	a, err := do(c, "GET", "http://team.example.com/login")
	took := time.Since(start)
	if err != nil || a.status != http.StatusUnauthorized || took < 3*time.Second {
		t.Errorf("/login with the auth server answering in 3 s: %v %v after %s; want the server's 401 after 3 s (the overrides' 5 s timeout)", a.status, err, took.Round(time.Millisecond))
	}
}

// TestGlobalAuthOptOutForbidden: with globalExtAuth.optOut: forbidden in
// the configuration file, every opt-out of the global authorization is
// refused and its routes stay authorized (the global context asks the
// testserver for 403) through a real Envoy: an ExtAuthPolicy's
// disabled: true on an HTTPRoute's /login (Accepted False,
// OptOutForbidden), an HTTPProxy route's authPolicy.disabled and an
// HTTPProxy's globalExtAuthDisabled (warnings OptOutForbidden). Before the
// switch existed the configuration file was refused (unknown field).
func TestGlobalAuthOptOutForbidden(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`globalExtAuth:
  extensionService: %s/auth
  responseTimeout: 2s
  optOut: forbidden
  authPolicy:
    context: {%s: "403"}
`, gwNS, denyKey))
	g, objs, c, _ := optOutStack(t, "--config", cfg)
	off := loginOff()
	echo := []contourv1.Service{{Name: "team", Port: 80}}
	objs = append(objs, off,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "route-off"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "route-off.example.net"},
			Routes: []contourv1.Route{{Conditions: []contourv1.MatchCondition{{Exact: "/login"}}, Services: echo,
				AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "host-off"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "host-off.example.net",
				Authorization: &contourv1.AuthorizationServer{GlobalExternalAuthorizationDisabled: true}},
			Routes: []contourv1.Route{{Services: echo}},
		}},
	)
	g.apply(t, objs...)

	for _, url := range []string{"http://team.example.com/login", "http://route-off.example.net/login", "http://host-off.example.net/"} {
		a := eventuallyStatus(t, c, http.StatusForbidden, "GET", url)
		if a.echo != nil {
			t.Errorf("%s: answered by an upstream: %v", url, a)
		}
	}
	g.eventuallyPolicy(t, off, "team", "login", optOutForbidden)
	for _, name := range []string{"route-off", "host-off"} {
		harness.Eventually(t, 30*time.Second, func() error { return g.proxyWarning(name, optOutReason) })
	}
}

// proxyWarning checks that HTTPProxy gwNS/name is Valid with an AuthError
// warning of reason.
func (g *gatewayStack) proxyWarning(name, reason string) error {
	var p contourv1.HTTPProxy
	if err := g.api.Client.Get(context.Background(), client.ObjectKey{Namespace: gwNS, Name: name}, &p); err != nil {
		return err
	}
	c := p.Status.GetCondition(contourv1.ValidConditionType)
	if c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("HTTPProxy %s: Valid %v, want True", name, c)
	}
	for _, w := range c.Warnings {
		if w.Type == contourv1.ConditionTypeAuthError && w.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("HTTPProxy %s: no AuthError/%s warning in %+v", name, reason, c.Warnings)
}
