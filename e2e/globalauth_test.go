package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// globalAuthConfig is the control plane's configuration file in this
// scenario; version changes on reload.
func globalAuthConfig(version string) string {
	return fmt.Sprintf(`globalExtAuth:
  extensionService: %s/auth-h2c
  failOpen: false
  responseTimeout: 2s
  authPolicy:
    context: {scope: global, version: "%s"}
`, harness.AuthNamespace, version)
}

// TestGlobalExternalAuthorization runs the global-external-authorization
// spec through the real Envoy, the control plane in kubernetes mode and the
// real API server: global authorization on the HTTP listener, the virtual
// host and route opt-outs, a route re-enabling it, HTTPS hosts and the
// fallback-certificate chain, an HTTPS host's own authorization overriding
// it, the configuration file's reload, and what
// happens while the global ExtensionService is missing.
func TestGlobalExternalAuthorization(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, globalAuthConfig("1"))
	s, c := harness.StartKubernetesStack(t, "--config", cfg, "--fallback-certificate", "default/fallback-tls")
	ctx := context.Background()

	serverCert := s.CA.Issue(t, "tls-global.example.com", "tls-own.example.com", "fallback.example.com")
	// Clients without SNI get the fallback certificate; ours connect to
	// 127.0.0.1, so it names that address.
	fallbackCert := s.CA.Issue(t, "127.0.0.1")
	h2c := "h2c"
	globalExt := &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9443}}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		serverCert.Secret("default", "server-tls"),
		fallbackCert.Secret("default", "fallback-tls"),
		s.CA.Secret(harness.AuthNamespace, "auth-ca"),
		globalExt,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-tls"},
			Spec: v1alpha1.ExtensionServiceSpec{
				UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "auth-ca", SubjectName: "auth.portcullis.test"},
				Services:           []v1alpha1.ExtensionServiceTarget{{Name: "auth-tls", Port: 9443}}}},
	}
	objs = append(objs, s.Loopback("default", "echo", 80, c.Echo.Port)...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-h2c", 9443, harness.Port(t, c.AuthH2C))...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-tls", 9443, harness.Port(t, c.AuthTLS))...)
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	route := func(prefix string, policy *contourv1.AuthorizationPolicy) contourv1.Route {
		return contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: prefix}}, AuthPolicy: policy, Services: echo}
	}
	proxy := func(name, fqdn string, tls bool, auth *contourv1.AuthorizationServer, routes ...contourv1.Route) *contourv1.HTTPProxy {
		p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn, Authorization: auth}, Routes: routes}}
		if tls {
			p.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "server-tls"}
		}
		return p
	}
	objs = append(objs,
		// The "per route opted out" sample (docs/design/global-external-authorization.md), on the HTTP listener.
		proxy("plain", "plain.example.com", false, nil,
			route("/", &contourv1.AuthorizationPolicy{Context: map[string]string{"route": "apex"}}),
			route("/subpage", &contourv1.AuthorizationPolicy{Disabled: true, Context: map[string]string{"route": "subpage"}}),
			route("/deny", &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}})),
		// The "one virtual host opted out" sample (docs/design/global-external-authorization.md).
		proxy("opt-out", "opt-out.example.com", false, &contourv1.AuthorizationServer{GlobalExternalAuthorizationDisabled: true},
			route("/", nil)),
		// Off for the host by default, re-enabled by one route.
		proxy("re-enable", "re-enable.example.com", false, &contourv1.AuthorizationServer{AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}},
			route("/", nil),
			route("/private", &contourv1.AuthorizationPolicy{Disabled: false, Context: map[string]string{"route": "private"}})),
		// An HTTPS host without authorization gets the global one.
		proxy("tls-global", "tls-global.example.com", true, nil, route("/", nil)),
		// So does the fallback-certificate chain, for clients without SNI.
		func() *contourv1.HTTPProxy {
			p := proxy("fallback", "fallback.example.com", true, nil, route("/", &contourv1.AuthorizationPolicy{Context: map[string]string{"route": "fallback"}}))
			p.Spec.VirtualHost.TLS.EnableFallbackCertificate = true
			return p
		}(),
		// An HTTPS host's own authorization overrides the global one.
		proxy("tls-own", "tls-own.example.com", true, &contourv1.AuthorizationServer{
			ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "auth-tls"},
			AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{"scope": "own"}},
		}, route("/", nil), route("/deny", &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "401"}})),
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	httpc := s.HTTP()
	https := s.HTTPS(s.CA.CertPEM)

	authorized := func(t *testing.T, c *http.Client, url string, wantContext map[string]string) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			e, err := harness.GetEcho(c, harness.MustRequest(t, url), http.StatusOK)
			if err != nil {
				return err
			}
			want := map[string]string{"Auth-Handler": "testserver"}
			for k, v := range wantContext {
				want["Auth-Context-"+k] = v
			}
			if err := harness.WantHeaders(e.Headers, want); err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			return nil
		})
	}
	unauthorized := func(t *testing.T, c *http.Client, url string) {
		t.Helper()
		before := harness.AuthChecks(t, s.AuthMetrics)
		e := harness.EventuallyEcho(t, c, harness.MustRequest(t, url), http.StatusOK)
		if h := e.Headers.Get("Auth-Handler"); h != "" {
			t.Errorf("%s: upstream saw Auth-Handler %q on a route without authorization", url, h)
		}
		if after := harness.AuthChecks(t, s.AuthMetrics); after != before {
			t.Errorf("%s: the global auth server answered %d checks for a route without authorization", url, after-before)
		}
	}

	t.Run("HTTP listener: global authorization with merged context", func(t *testing.T) {
		authorized(t, httpc, "http://plain.example.com/", map[string]string{"Scope": "global", "Version": "1", "Route": "apex"})
		harness.EventuallyStatus(t, httpc, "http://plain.example.com/deny", http.StatusForbidden)
	})
	t.Run("route opt-out (authPolicy.disabled)", func(t *testing.T) {
		unauthorized(t, httpc, "http://plain.example.com/subpage")
	})
	t.Run("virtual host opt-out (globalExtAuthDisabled)", func(t *testing.T) {
		unauthorized(t, httpc, "http://opt-out.example.com/")
	})
	t.Run("route re-enables under a host that disabled it", func(t *testing.T) {
		unauthorized(t, httpc, "http://re-enable.example.com/")
		authorized(t, httpc, "http://re-enable.example.com/private", map[string]string{"Scope": "global", "Route": "private"})
	})
	t.Run("HTTPS host without authorization gets the global one", func(t *testing.T) {
		authorized(t, https, "https://tls-global.example.com/", map[string]string{"Scope": "global"})
	})
	t.Run("fallback-certificate chain gets the global authorization", func(t *testing.T) {
		// https://127.0.0.1/ sends no SNI: the fallback chain answers, and
		// routes by the Host header.
		harness.Eventually(t, 30*time.Second, func() error {
			req := harness.MustRequest(t, "https://127.0.0.1/")
			req.Host = "fallback.example.com"
			e, err := harness.GetEcho(https, req, http.StatusOK)
			if err != nil {
				return err
			}
			if h, r := e.Headers.Get("Auth-Handler"), e.Headers.Get("Auth-Context-Route"); h != "testserver" || r != "fallback" {
				return fmt.Errorf("upstream saw Auth-Handler %q, Auth-Context-Route %q; want testserver, fallback", h, r)
			}
			return nil
		})
	})
	t.Run("HTTPS host's own authorization overrides the global one", func(t *testing.T) {
		before := harness.AuthChecks(t, s.AuthMetrics)
		authorized(t, https, "https://tls-own.example.com/", map[string]string{"Scope": "own", "Version": ""})
		if after := harness.AuthChecks(t, s.AuthMetrics); after != before {
			t.Errorf("the global auth server answered %d checks for a host with its own authorization", after-before)
		}
		// 401 from the host's own auth server.
		harness.EventuallyStatus(t, https, "https://tls-own.example.com/deny", http.StatusUnauthorized)
	})
	t.Run("configuration file reload", func(t *testing.T) {
		harness.WriteConfigFile(t, cfg, globalAuthConfig("2"))
		authorized(t, httpc, "http://plain.example.com/", map[string]string{"Scope": "global", "Version": "2"})
		// A broken file is not applied: the last good configuration stays.
		harness.WriteConfigFile(t, cfg, "globalExtAuth: {extensionService: no-namespace, failOpen: true}\n")
		time.Sleep(time.Second) // several poll intervals; nothing may change
		authorized(t, httpc, "http://plain.example.com/", map[string]string{"Version": "2"})
		harness.EventuallyStatus(t, httpc, "http://plain.example.com/deny", http.StatusForbidden)
		harness.WriteConfigFile(t, cfg, globalAuthConfig("3"))
		authorized(t, httpc, "http://plain.example.com/", map[string]string{"Version": "3"})
	})
	t.Run("missing global ExtensionService fails closed, warns, and heals", func(t *testing.T) {
		if err := s.Objects.Delete(ctx, globalExt); err != nil {
			t.Fatal(err)
		}
		harness.EventuallyStatus(t, httpc, "http://plain.example.com/", http.StatusForbidden)
		// Opted-out routes keep working; the host's own authorization too.
		harness.EventuallyEcho(t, httpc, harness.MustRequest(t, "http://plain.example.com/subpage"), http.StatusOK)
		authorized(t, https, "https://tls-own.example.com/", map[string]string{"Scope": "own"})
		harness.Eventually(t, 30*time.Second, func() error {
			return proxyWarning(s, "plain", "GlobalExtAuthUnavailable", true)
		})
		if err := proxyWarning(s, "opt-out", "GlobalExtAuthUnavailable", false); err != nil {
			t.Error(err)
		}
		globalExt.ResourceVersion = ""
		if err := s.Objects.Apply(ctx, globalExt); err != nil {
			t.Fatal(err)
		}
		authorized(t, httpc, "http://plain.example.com/", map[string]string{"Scope": "global"})
		harness.Eventually(t, 30*time.Second, func() error {
			return proxyWarning(s, "plain", "GlobalExtAuthUnavailable", false)
		})
	})
}

// proxyWarning checks whether the Valid condition of HTTPProxy default/name,
// read back from the API server, is True with (or without) an AuthError
// warning of this reason.
func proxyWarning(s *harness.LocalStack, name, reason string, want bool) error {
	return proxyWarningIn(s, "default", name, contourv1.ConditionTypeAuthError, reason, want)
}

// proxyWarningIn is proxyWarning for any namespace and warning type.
func proxyWarningIn(s *harness.LocalStack, namespace, name, typ, reason string, want bool) error {
	api, ok := s.Objects.(*harness.APIServer)
	if !ok {
		return fmt.Errorf("status is read from the API server only in kubernetes mode")
	}
	var p contourv1.HTTPProxy
	if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		return err
	}
	c := p.Status.GetCondition(contourv1.ValidConditionType)
	if c == nil {
		return fmt.Errorf("HTTPProxy %s: no Valid condition yet", name)
	}
	if c.Status != metav1.ConditionTrue {
		return fmt.Errorf("HTTPProxy %s: Valid is %s (%s: %s), want True: a warning never invalidates", name, c.Status, c.Reason, c.Message)
	}
	var reasons []string
	found := false
	for _, w := range c.Warnings {
		reasons = append(reasons, w.Type+"/"+w.Reason)
		if w.Reason == reason && w.Type == typ {
			found = true
		}
	}
	if found != want {
		return fmt.Errorf("HTTPProxy %s: warnings %s; want %s/%s present=%v", name, strings.Join(reasons, ", "), typ, reason, want)
	}
	return nil
}
