package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// The sample extension's kind (extension/sample/basicauth/crd.yaml).
const (
	basicAuthGroup   = "examples.portcullis.dev"
	basicAuthVersion = "v1alpha1"
	basicAuthKind    = "BasicAuthFilter"
	extNS            = gwNS // the Gateway's: it allows routes of its namespace only
	extHost          = "basicauth.example.com"
)

// basicAuthFilter is a BasicAuthFilter of extNS.
func basicAuthFilter(name, realm string, disabled bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": basicAuthGroup + "/" + basicAuthVersion,
		"kind":       basicAuthKind,
		"metadata":   map[string]any{"namespace": extNS, "name": name},
		"spec":       map[string]any{"realm": realm, "disabled": disabled},
	}}
	return u
}

// basicAuthRoute is the HTTPRoute of extHost: /admin references the
// BasicAuthFilter "staff", every other path is open; extra rules follow.
func basicAuthRoute(extra ...gwapiv1.HTTPRouteRule) *gwapiv1.HTTPRoute {
	admin := namedRule("admin", "echo", pathMatch(gwapiv1.PathMatchPathPrefix, "/admin"))
	admin.Filters = []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterExtensionRef,
		ExtensionRef: &gwapiv1.LocalObjectReference{Group: basicAuthGroup, Kind: basicAuthKind, Name: "staff"}}}
	rules := append([]gwapiv1.HTTPRouteRule{admin, namedRule("public", "echo")}, extra...)
	return httpRoute(extNS, "basicauth", parentRef("gw", "http"), hostnames(extHost), rules...)
}

// extensionConfig is portcullis's configuration file registering the
// sample extension at addr with the failure policy.
func extensionConfig(t *testing.T, addr, policy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, path, fmt.Sprintf(`extensions:
- name: basicauth
  address: %s
  hooks: [PostTranslateInsert, PostHTTPListenerModify, PostRouteModify]
  resources:
  - {group: %s, version: %s, kind: %s}
  failurePolicy: %s
  # Generous: the machine is shared, and a late answer is a failure.
  timeout: 5s
  # The auth server the extension adds a cluster for is on loopback.
  allowLocalEndpoints: true
`, addr, basicAuthGroup, basicAuthVersion, basicAuthKind, policy))
	return path
}

// challenged checks that a is a 401 asking for Basic credentials of realm.
func (a answer) challenged(realm string) error {
	want := `Basic realm="` + realm + `"`
	if got := a.header.Get("WWW-Authenticate"); a.status != http.StatusUnauthorized || !strings.HasPrefix(got, want) {
		return fmt.Errorf("got %v with WWW-Authenticate %q, want 401 with %s", a, got, want)
	}
	return nil
}

// hookCalls sums portcullis_extension_hook_calls_total of the extension
// name for the outcomes, from the control plane's metrics.
func hookCalls(t *testing.T, admin, name string, outcomes ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		labels, ok := strings.CutPrefix(line, "portcullis_extension_hook_calls_total{")
		if !ok || !strings.Contains(labels, `extension="`+name+`"`) ||
			!slices.ContainsFunc(outcomes, func(o string) bool { return strings.Contains(labels, `outcome="`+o+`"`) }) {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += f
	}
	return total
}

// extensionCondition is the ExtensionError condition of the basicauth
// route's parent status for gw/http, nil if there is none; it fails when
// the parent has no status yet or is not Accepted.
func (g *gatewayStack) extensionCondition(r *gwapiv1.HTTPRoute) (*metav1.Condition, error) {
	if err := g.api.Client.Get(context.Background(), client.ObjectKeyFromObject(r), r); err != nil {
		return nil, err
	}
	p, err := routeParent(r.Status.Parents, "gw", "http")
	if err != nil {
		return nil, err
	}
	if err := checkConds(p.Conditions, r.Generation, accepted); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(p.Conditions, func(c metav1.Condition) bool { return c.Type == "ExtensionError" })
	if i < 0 {
		return nil, nil
	}
	return &p.Conditions[i], nil
}

// eventuallyExtensionError waits until the route's parent status has an
// ExtensionError (True, ExtensionHookFailed) whose message has each of
// parts, and Accepted is still True.
func (g *gatewayStack) eventuallyExtensionError(t *testing.T, parts ...string) {
	t.Helper()
	r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: extNS, Name: "basicauth"}}
	harness.Eventually(t, statusTimeout, func() error {
		c, err := g.extensionCondition(r)
		if err != nil {
			return err
		}
		if c == nil {
			return fmt.Errorf("HTTPRoute %s/basicauth: no ExtensionError condition yet", extNS)
		}
		if c.Status != metav1.ConditionTrue || c.Reason != "ExtensionHookFailed" {
			return fmt.Errorf("ExtensionError=%s/%s (%q), want True/ExtensionHookFailed", c.Status, c.Reason, c.Message)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("ExtensionError message %q does not say %q", c.Message, p)
			}
		}
		return nil
	})
}

// eventuallyNoExtensionError waits until the route's parent status has no
// ExtensionError condition, and Accepted True.
func (g *gatewayStack) eventuallyNoExtensionError(t *testing.T) {
	t.Helper()
	r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: extNS, Name: "basicauth"}}
	harness.Eventually(t, statusTimeout, func() error {
		c, err := g.extensionCondition(r)
		if err != nil {
			return err
		}
		if c != nil {
			return fmt.Errorf("HTTPRoute %s/basicauth still has ExtensionError=%s/%s (%q)", extNS, c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// TestExtensionBasicAuth runs the sample extension server
// (basicauth-extension) end to end: the real API server with the
// BasicAuthFilter CRD, portcullis in kubernetes mode calling the
// extension's hooks, the real Envoy enforcing HTTP Basic authentication
// through `authserver htpasswd`, and the extension failing under each
// failure policy. One API server serves both policies, each with its own
// portcullis and Envoy.
func TestExtensionBasicAuth(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	repo := harness.RepoRoot(t)
	// The CRD is there before portcullis starts: a kind installed later is
	// only looked for again every 30 s.
	api := harness.StartAPIServer(t, append(harness.CRDDirs(t), filepath.Join(repo, "extension/sample/basicauth/crd.yaml"))...)

	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	extension := harness.BuildBinary(t, "github.com/portcullis/portcullis/extension/cmd/basicauth-extension")
	// alice / alice-password, of every realm.
	authAddr := harness.FreeAddr(t)
	harness.StartProcess(t, "authserver-htpasswd", authserver, "htpasswd", "--secrets", "off",
		"--htpasswd-file", filepath.Join(repo, "examples/htpasswd/users.htpasswd"), "--auth-realm", "staff",
		"--address", authAddr, "--metrics-address", "")
	echo := harness.StartEcho(t, "echo")
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitTCP(waitCtx, authAddr); err != nil {
		t.Fatalf("authserver htpasswd: %v", err)
	}

	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: extNS}}}
	objs = append(objs, echoService(extNS, echo)...)
	objs = append(objs,
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		basicAuthFilter("staff", "staff", false),
		basicAuthRoute(),
	)
	if err := api.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}

	// run starts the extension, portcullis (registering it with policy)
	// and Envoy, and checks that authentication works.
	run := func(t *testing.T, policy string) (*gatewayStack, *harness.Process, *http.Client) {
		t.Helper()
		extAddr := harness.FreeAddr(t)
		ext := harness.StartProcess(t, "basicauth-extension", extension, "--listen", extAddr, "--auth-server", authAddr,
			// bcrypt on a busy shared machine: be generous.
			"--auth-server-timeout", "10s")
		waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := harness.WaitTCP(waitCtx, extAddr); err != nil {
			t.Fatalf("basicauth-extension: %v", err)
		}
		httpAddr, httpsAddr := gatewayEnvoyAddr(t, 80), gatewayEnvoyAddr(t, 443)
		admin := harness.StartEnvoyAndControlPlaneAt(t, httpAddr, httpsAddr,
			"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
			"--enable-external-name-services", "--allow-loopback-external-names",
			"--config", extensionConfig(t, extAddr, policy))
		g := &gatewayStack{kubeControlPlane: &kubeControlPlane{api: api, httpAddr: httpAddr, httpsAddr: httpsAddr, admin: admin}}
		return g, ext, harness.HTTPClient(httpAddr)
	}
	const (
		adminURL  = "http://" + extHost + "/admin"
		publicURL = "http://" + extHost + "/"
	)
	basicAuth := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	alice := basicAuth("alice", "alice-password")
	// challenge waits until /admin without credentials is a 401 of realm.
	challenge := func(t *testing.T, c *http.Client, realm string) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() error {
			a, err := do(c, "GET", adminURL)
			if err != nil {
				return err
			}
			return a.challenged(realm)
		})
	}
	// authenticated waits until alice gets /admin, checked by the htpasswd
	// server in realm.
	authenticated := func(t *testing.T, c *http.Client, realm string) {
		t.Helper()
		a := eventuallyServed(t, c, "echo", "GET", adminURL, "Authorization", alice)
		if err := harness.WantHeaders(a.echo.Headers, map[string]string{"Auth-Username": "alice", "Auth-Realm": realm,
			"Auth-Context-Route": "HTTPRoute/" + extNS + "/basicauth", "Auth-Context-Basicauth-Filter": extNS + "/staff"}); err != nil {
			t.Errorf("alice on /admin: %v", err)
		}
	}
	// setFilter replaces the BasicAuthFilter "staff".
	setFilter := func(t *testing.T, realm string, disabled bool) {
		t.Helper()
		if err := api.Apply(ctx, basicAuthFilter("staff", realm, disabled)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Closed", func(t *testing.T) {
		g, ext, c := run(t, "Closed")
		g.eventuallyHTTPRoute(t, extNS, "basicauth", "gw", "http", accepted, resolvedRefs)

		// The extension's listener and route hooks: /admin needs
		// credentials, the rest is open.
		challenge(t, c, "staff")
		authenticated(t, c, "staff")
		if a := eventuallyServed(t, c, "echo", "GET", publicURL); a.echo.Headers.Get("Auth-Username") != "" {
			t.Errorf("/ was authenticated: %v", a.echo.Headers)
		}
		if a, err := do(c, "GET", adminURL, "Authorization", basicAuth("alice", "wrong")); err != nil || a.challenged("staff") != nil {
			t.Errorf("/admin with a wrong password: %v, %v", a, err)
		}

		// Envoy follows the BasicAuthFilter.
		setFilter(t, "staff", true)
		eventuallyServed(t, c, "echo", "GET", adminURL)
		setFilter(t, "staff", false)
		challenge(t, c, "staff")
		g.eventuallyNoExtensionError(t)

		// The extension stops: a change needing its hook is not published,
		// the last configuration stays in force, and the route says why.
		ext.Stop()
		setFilter(t, "ops", false)
		g.eventuallyExtensionError(t, `extension "basicauth"`, "PostRouteModify", "Unavailable", "failurePolicy Closed")
		for range 5 {
			a, err := do(c, "GET", adminURL)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.challenged("staff"); err != nil {
				t.Fatalf("/admin without credentials while the extension is down (Closed): %v", err)
			}
		}
		authenticated(t, c, "staff")
		if n := hookCalls(t, g.admin, "basicauth", "error", "timeout"); n == 0 {
			t.Errorf("portcullis_extension_hook_calls_total{extension=basicauth,outcome=error|timeout} is 0 after the failure")
		}

		// The extension comes back: the change is published and the
		// condition goes, without restarting portcullis.
		ext.Start()
		challenge(t, c, "ops")
		authenticated(t, c, "ops")
		g.eventuallyNoExtensionError(t)
	})

	// Back to the first filter for the next run.
	setFilter(t, "staff", false)

	t.Run("Open", func(t *testing.T) {
		g, ext, c := run(t, "Open")
		g.eventuallyNoExtensionError(t)
		challenge(t, c, "staff")
		authenticated(t, c, "staff")

		// The extension stops: the change is published without the
		// failed hook's, leaving /admin open, and the route is warned.
		ext.Stop()
		setFilter(t, "ops", false)
		g.eventuallyExtensionError(t, `extension "basicauth"`, "PostRouteModify", "Unavailable", "failurePolicy Open")
		if a := eventuallyServed(t, c, "echo", "GET", adminURL); a.echo.Headers.Get("Auth-Username") != "" {
			t.Errorf("/admin was authenticated with the extension down: %v", a.echo.Headers)
		}
		eventuallyServed(t, c, "echo", "GET", publicURL)
		if n := hookCalls(t, g.admin, "basicauth", "error", "timeout"); n == 0 {
			t.Errorf("portcullis_extension_hook_calls_total{extension=basicauth,outcome=error|timeout} is 0 after the failure")
		}

		// The extension comes back: authentication is back, in the new
		// realm, and the warning goes.
		ext.Start()
		challenge(t, c, "ops")
		g.eventuallyNoExtensionError(t)
	})
	t.Logf("TestExtensionBasicAuth took %v", time.Since(start).Round(time.Second))
}
