package e2e

import (
	"context"
	"fmt"
	"net/http"
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

func TestExternalAuthorizationFileProvider(t *testing.T) {
	s, c := harness.StartFileStack(t)
	runAuthorizationScenario(t, s, c)
}

func TestExternalAuthorizationKubernetesProvider(t *testing.T) {
	s, c := harness.StartKubernetesStack(t)
	runAuthorizationScenario(t, s, c)
}

// runAuthorizationScenario is the foundation's end-to-end scenario, the same
// whichever provider feeds the control plane.
func runAuthorizationScenario(t *testing.T, s *harness.LocalStack, c *harness.Components) {
	ctx := context.Background()
	serverCert := s.CA.Issue(t, "secure.example.com", "tls-auth.example.com", "closed.example.com", "open.example.com")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		serverCert.Secret("default", "server-tls"),
		s.CA.Secret(harness.AuthNamespace, "auth-ca"),
	}
	objs = append(objs, s.Loopback("default", "echo", 80, c.Echo.Port)...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-h2c", 9443, harness.Port(t, c.AuthH2C))...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-tls", 9443, harness.Port(t, c.AuthTLS))...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-down", 9443, harness.FreePort(t))...)
	h2c := "h2c"
	objs = append(objs,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9443}}}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-tls"},
			Spec: v1alpha1.ExtensionServiceSpec{
				UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "auth-ca", SubjectName: "auth.portcullis.test"},
				Services:           []v1alpha1.ExtensionServiceTarget{{Name: "auth-tls", Port: 9443}}}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-down"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-down", Port: 9443}}}},
		protectedProxy(),
		authProxy("tls-auth", "tls-auth.example.com", "auth-tls", false),
		authProxy("closed", "closed.example.com", "auth-down", false),
		authProxy("open", "open.example.com", "auth-down", true),
		// Invalid: authorization without TLS.
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "invalid"},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{Fqdn: "invalid.example.com", Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "auth-h2c"}}},
				Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
			}},
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := s.HTTPS(s.CA.CertPEM)

	t.Run("protected route reaches the upstream with the auth headers and merged context", func(t *testing.T) {
		req := harness.MustRequest(t, "https://secure.example.com/team/page")
		req.Header.Set("Auth-Handler", "forged-by-client")
		echo := harness.EventuallyEcho(t, https, req, http.StatusOK)
		if got := echo.Headers.Values("Auth-Handler"); len(got) != 1 || got[0] != "testserver" {
			t.Errorf("upstream saw Auth-Handler %q, want only testserver (the client's copy must be removed)", got)
		}
		// The route's context overrides the virtual host's key (tier) and
		// adds its own (team); app comes from the virtual host.
		if err := harness.WantHeaders(echo.Headers, map[string]string{"Auth-Context-Tier": "platinum", "Auth-Context-Team": "a", "Auth-Context-App": "secure"}); err != nil {
			t.Error(err)
		}
	})

	t.Run("route with authPolicy.disabled never calls the auth server", func(t *testing.T) {
		before := harness.AuthChecks(t, s.AuthMetrics)
		echo := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://secure.example.com/public/x"), http.StatusOK)
		if h := echo.Headers.Get("Auth-Handler"); h != "" {
			t.Errorf("upstream saw Auth-Handler %q on a route with authorization disabled", h)
		}
		if after := harness.AuthChecks(t, s.AuthMetrics); after != before {
			t.Errorf("the auth server answered %d checks during a request to a disabled route", after-before)
		}
		// And a protected route does call it: the counter can move.
		harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://secure.example.com/"), http.StatusOK)
		if after := harness.AuthChecks(t, s.AuthMetrics); after <= before {
			t.Errorf("checks counter did not move for a protected route (%d -> %d): the counter proves nothing", before, after)
		}
	})

	t.Run("TLS ExtensionService with validation", func(t *testing.T) {
		echo := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://tls-auth.example.com/"), http.StatusOK)
		if got := echo.Headers.Get("Auth-Handler"); got != "testserver" {
			t.Errorf("Auth-Handler = %q, want testserver", got)
		}
	})

	t.Run("auth server down: failOpen false refuses, failOpen true serves", func(t *testing.T) {
		harness.EventuallyStatus(t, https, "https://closed.example.com/", http.StatusForbidden)
		harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://open.example.com/"), http.StatusOK)
	})

	t.Run("plain HTTP redirects to the HTTPS listener", func(t *testing.T) {
		harness.EventuallyStatus(t, s.HTTP(), "http://secure.example.com/team/page", http.StatusMovedPermanently)
		c := s.HTTP()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Get("http://secure.example.com/team/page")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := "https://secure.example.com:" + s.HTTPSAddr[strings.LastIndex(s.HTTPSAddr, ":")+1:] + "/team/page"
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("Location %q, want %q (the HTTPS listener's port, --https-redirect-port)", got, want)
		}
	})

	t.Run("invalid HTTPProxy gets its status and the others keep working", func(t *testing.T) {
		harness.Eventually(t, 30*time.Second, func() error {
			status, reason, err := s.Validity("default", "invalid")
			if err != nil {
				return err
			}
			if status != "False" || reason != "AuthNotPermitted" {
				return fmt.Errorf("Valid=%s reason=%s, want False AuthNotPermitted", status, reason)
			}
			return nil
		})
		status, _, err := s.Validity("default", "secure")
		if err != nil || status != "True" {
			t.Errorf("secure: Valid=%s (%v), want True", status, err)
		}
		code, err := harness.StatusCode(s.HTTP(), "http://invalid.example.com/")
		if err != nil || code != http.StatusNotFound {
			t.Errorf("invalid.example.com over HTTP: %d (%v), want 404: an invalid proxy must not be served", code, err)
		}
		harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://secure.example.com/"), http.StatusOK)
	})

	t.Run("an update reaches Envoy without restarting anything", func(t *testing.T) {
		p := protectedProxy()
		p.Spec.Routes = append([]contourv1.Route{{
			Conditions: []contourv1.MatchCondition{{Prefix: "/new"}},
			AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"version": "2"}},
			Services:   []contourv1.Service{{Name: "echo", Port: 80}},
		}}, p.Spec.Routes...)
		if err := s.Objects.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 20*time.Second, func() error {
			echo, err := harness.GetEcho(https, harness.MustRequest(t, "https://secure.example.com/new"), http.StatusOK)
			if err != nil {
				return err
			}
			if got := echo.Headers.Get("Auth-Context-Version"); got != "2" {
				return fmt.Errorf("Auth-Context-Version = %q, want 2", got)
			}
			return nil
		})
	})
}

func protectedProxy() *contourv1.HTTPProxy {
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secure"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: "secure.example.com",
				TLS:  &contourv1.TLS{SecretName: "server-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
					AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{"tier": "gold", "app": "secure"}},
				},
			},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}, Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/team"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"tier": "platinum", "team": "a"}}, Services: echo},
				{Services: echo},
			},
		},
	}
}

func authProxy(name, fqdn, ext string, failOpen bool) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: fqdn,
				TLS:  &contourv1.TLS{SecretName: "server-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: ext},
					FailOpen:            failOpen,
					ResponseTimeout:     "500ms",
				},
			},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
}
