package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

func init() {
	utilruntime.Must(contourv1.AddToScheme(harness.Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(harness.Scheme))
}

const authNamespace = "portcullis-auth"

// stack is a running Portcullis for one scenario, in either provider mode.
type stack struct {
	*harness.Stack
	ca *harness.CA
	// validity reads the Valid condition (status, reason) of an HTTPProxy,
	// from wherever this mode publishes status.
	validity func(namespace, name string) (string, string, error)
	// authMetrics is the testserver's metrics URL.
	authMetrics string
	// loopback makes a Service (and its endpoints) for a process on
	// 127.0.0.1 in the way this mode allows.
	loopback func(namespace, name string, port, target int) []client.Object
}

// components are the processes every mode runs beside the control plane.
type components struct {
	echo        *harness.Echo
	authH2C     string // 127.0.0.1:port of the plaintext testserver
	authTLS     string // 127.0.0.1:port of the TLS testserver
	authMetrics string
	ca          *harness.CA
	authCAPEM   []byte
}

func startComponents(t *testing.T) *components {
	c := &components{echo: harness.StartEcho(t, "echo"), ca: harness.NewCA(t, "portcullis-e2e")}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	c.authH2C = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	c.authMetrics = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.StartProcess(t, "authserver-h2c", authserver, "testserver", "--address", c.authH2C, "--metrics-address", c.authMetrics)

	authCert := c.ca.Issue(t, "auth.portcullis.test")
	certFile, keyFile := authCert.WriteFiles(t)
	c.authTLS = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.StartProcess(t, "authserver-tls", authserver, "testserver", "--address", c.authTLS, "--metrics-address", "",
		"--tls-cert-path", certFile, "--tls-key-path", keyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, a := range []string{c.authH2C, c.authTLS} {
		if err := harness.WaitTCP(ctx, a); err != nil {
			t.Fatalf("auth server at %s: %v", a, err)
		}
	}
	return c
}

// startEnvoyAndControlPlane runs portcullis serve with the given provider
// arguments, and Envoy bootstrapped from it.
func startEnvoyAndControlPlane(t *testing.T, providerArgs ...string) (httpAddr, httpsAddr, adminAddr string) {
	portcullis := harness.BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	httpAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	httpsAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	xds := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	adminAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	args := append([]string{"serve", "--xds-address", xds, "--admin-address", adminAddr,
		"--envoy-http-address", httpAddr, "--envoy-https-address", httpsAddr, "--https-redirect-port", httpsAddr[strings.LastIndex(httpsAddr, ":")+1:],
		"--debounce", "50ms", "--poll-interval", "200ms"}, providerArgs...)
	harness.StartProcess(t, "portcullis", portcullis, args...)

	bootstrap := filepath.Join(t.TempDir(), "envoy.json")
	out, err := runCommand(portcullis, "bootstrap", "--xds-address", xds,
		"--envoy-admin-address", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "-o", bootstrap)
	if err != nil {
		t.Fatalf("portcullis bootstrap: %v\n%s", err, out)
	}
	harness.StartEnvoy(t, bootstrap)
	return httpAddr, httpsAddr, adminAddr
}

// startOnAPIServer runs portcullis serve with the kubernetes provider on
// api, and Envoy; extraArgs go to portcullis serve.
func startOnAPIServer(t *testing.T, api *harness.APIServer, extraArgs ...string) *harness.Stack {
	httpAddr, httpsAddr, _ := startEnvoyAndControlPlane(t, append([]string{"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		// The tests' upstreams are ExternalName Services for localhost (see
		// loopbackExternalName): opt in, as only tests should.
		"--enable-external-name-services", "--allow-loopback-external-names"}, extraArgs...)...)
	return &harness.Stack{Objects: api, HTTPAddr: httpAddr, HTTPSAddr: httpsAddr}
}

func startFileStack(t *testing.T) (*stack, *components) {
	c := startComponents(t)
	dir := t.TempDir()
	httpAddr, httpsAddr, admin := startEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	s := &stack{
		Stack:       &harness.Stack{Objects: harness.Dir(dir), HTTPAddr: httpAddr, HTTPSAddr: httpsAddr},
		ca:          c.ca,
		authMetrics: "http://" + c.authMetrics + "/metrics",
		loopback:    loopbackEndpointSlice,
	}
	s.validity = func(namespace, name string) (string, string, error) {
		resp, err := http.Get("http://" + admin + "/status")
		if err != nil {
			return "", "", err
		}
		defer resp.Body.Close()
		var body struct {
			Objects []struct {
				Kind, Namespace, Name string
				Status                contourv1.HTTPProxyStatus
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return "", "", err
		}
		for _, o := range body.Objects {
			if o.Kind == "HTTPProxy" && o.Namespace == namespace && o.Name == name {
				return validOf(o.Status)
			}
		}
		return "", "", fmt.Errorf("no status for HTTPProxy %s/%s yet", namespace, name)
	}
	return s, c
}

// startKubernetesStack runs the stack on a real API server; extraArgs go
// to portcullis serve (e.g. --config).
func startKubernetesStack(t *testing.T, extraArgs ...string) (*stack, *components) {
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	c := startComponents(t)
	s := &stack{
		Stack:       startOnAPIServer(t, api, extraArgs...),
		ca:          c.ca,
		authMetrics: "http://" + c.authMetrics + "/metrics",
		loopback:    loopbackExternalName,
	}
	s.validity = func(namespace, name string) (string, string, error) {
		var p contourv1.HTTPProxy
		if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			return "", "", err
		}
		return validOf(p.Status)
	}
	return s, c
}

func validOf(st contourv1.HTTPProxyStatus) (string, string, error) {
	c := st.GetCondition(contourv1.ValidConditionType)
	if c == nil {
		return "", "", fmt.Errorf("no Valid condition yet")
	}
	return string(c.Status), c.Reason, nil
}

func TestExternalAuthorizationFileProvider(t *testing.T) {
	s, c := startFileStack(t)
	runAuthorizationScenario(t, s, c)
}

func TestExternalAuthorizationKubernetesProvider(t *testing.T) {
	s, c := startKubernetesStack(t)
	runAuthorizationScenario(t, s, c)
}

// runAuthorizationScenario is the foundation's end-to-end scenario, the same
// whichever provider feeds the control plane.
func runAuthorizationScenario(t *testing.T, s *stack, c *components) {
	ctx := context.Background()
	serverCert := s.ca.Issue(t, "secure.example.com", "tls-auth.example.com", "closed.example.com", "open.example.com")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authNamespace}},
		serverCert.Secret("default", "server-tls"),
		s.ca.Secret(authNamespace, "auth-ca"),
	}
	objs = append(objs, s.loopback("default", "echo", 80, c.echo.Port)...)
	objs = append(objs, s.loopback(authNamespace, "auth-h2c", 9443, port(t, c.authH2C))...)
	objs = append(objs, s.loopback(authNamespace, "auth-tls", 9443, port(t, c.authTLS))...)
	objs = append(objs, s.loopback(authNamespace, "auth-down", 9443, harness.FreePort(t))...)
	h2c := "h2c"
	objs = append(objs,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: authNamespace, Name: "auth-h2c"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9443}}}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: authNamespace, Name: "auth-tls"},
			Spec: v1alpha1.ExtensionServiceSpec{
				UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "auth-ca", SubjectName: "auth.portcullis.test"},
				Services:           []v1alpha1.ExtensionServiceTarget{{Name: "auth-tls", Port: 9443}}}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: authNamespace, Name: "auth-down"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-down", Port: 9443}}}},
		protectedProxy(),
		authProxy("tls-auth", "tls-auth.example.com", "auth-tls", false),
		authProxy("closed", "closed.example.com", "auth-down", false),
		authProxy("open", "open.example.com", "auth-down", true),
		// Invalid: authorization without TLS.
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "invalid"},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{Fqdn: "invalid.example.com", Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: authNamespace, Name: "auth-h2c"}}},
				Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
			}},
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := s.HTTPS(s.ca.CertPEM)

	t.Run("protected route reaches the upstream with the auth headers and merged context", func(t *testing.T) {
		req := mustRequest(t, "https://secure.example.com/team/page")
		req.Header.Set("Auth-Handler", "forged-by-client")
		echo := eventuallyEcho(t, https, req, http.StatusOK)
		if got := echo.Headers.Values("Auth-Handler"); len(got) != 1 || got[0] != "testserver" {
			t.Errorf("upstream saw Auth-Handler %q, want only testserver (the client's copy must be removed)", got)
		}
		// The route's context overrides the virtual host's key (tier) and
		// adds its own (team); app comes from the virtual host.
		if err := wantHeaders(echo.Headers, map[string]string{"Auth-Context-Tier": "platinum", "Auth-Context-Team": "a", "Auth-Context-App": "secure"}); err != nil {
			t.Error(err)
		}
	})

	t.Run("route with authPolicy.disabled never calls the auth server", func(t *testing.T) {
		before := checks(t, s.authMetrics)
		echo := eventuallyEcho(t, https, mustRequest(t, "https://secure.example.com/public/x"), http.StatusOK)
		if h := echo.Headers.Get("Auth-Handler"); h != "" {
			t.Errorf("upstream saw Auth-Handler %q on a route with authorization disabled", h)
		}
		if after := checks(t, s.authMetrics); after != before {
			t.Errorf("the auth server answered %d checks during a request to a disabled route", after-before)
		}
		// And a protected route does call it: the counter can move.
		eventuallyEcho(t, https, mustRequest(t, "https://secure.example.com/"), http.StatusOK)
		if after := checks(t, s.authMetrics); after <= before {
			t.Errorf("checks counter did not move for a protected route (%d -> %d): the counter proves nothing", before, after)
		}
	})

	t.Run("TLS ExtensionService with validation", func(t *testing.T) {
		echo := eventuallyEcho(t, https, mustRequest(t, "https://tls-auth.example.com/"), http.StatusOK)
		if got := echo.Headers.Get("Auth-Handler"); got != "testserver" {
			t.Errorf("Auth-Handler = %q, want testserver", got)
		}
	})

	t.Run("auth server down: failOpen false refuses, failOpen true serves", func(t *testing.T) {
		eventuallyStatus(t, https, "https://closed.example.com/", http.StatusForbidden)
		eventuallyEcho(t, https, mustRequest(t, "https://open.example.com/"), http.StatusOK)
	})

	t.Run("plain HTTP redirects to the HTTPS listener", func(t *testing.T) {
		eventuallyStatus(t, s.HTTP(), "http://secure.example.com/team/page", http.StatusMovedPermanently)
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
			status, reason, err := s.validity("default", "invalid")
			if err != nil {
				return err
			}
			if status != "False" || reason != "AuthNotPermitted" {
				return fmt.Errorf("Valid=%s reason=%s, want False AuthNotPermitted", status, reason)
			}
			return nil
		})
		status, _, err := s.validity("default", "secure")
		if err != nil || status != "True" {
			t.Errorf("secure: Valid=%s (%v), want True", status, err)
		}
		code, err := statusCode(s.HTTP(), "http://invalid.example.com/")
		if err != nil || code != http.StatusNotFound {
			t.Errorf("invalid.example.com over HTTP: %d (%v), want 404: an invalid proxy must not be served", code, err)
		}
		eventuallyEcho(t, https, mustRequest(t, "https://secure.example.com/"), http.StatusOK)
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
			echo, err := getEcho(https, mustRequest(t, "https://secure.example.com/new"), http.StatusOK)
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
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: authNamespace, Name: "auth-h2c"},
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
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: authNamespace, Name: ext},
					FailOpen:            failOpen,
					ResponseTimeout:     "500ms",
				},
			},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
}

// loopbackExternalName points a Service at a process on 127.0.0.1 for the
// real API server, which refuses loopback addresses in EndpointSlices: an
// ExternalName Service for localhost, its port mapped to the process's.
func loopbackExternalName(namespace, name string, port, target int) []client.Object {
	return []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "main", Port: int32(port), TargetPort: intstr.FromInt(target), Protocol: corev1.ProtocolTCP}}}}}
}

// loopbackEndpointSlice is a Service and its EndpointSlice pointing at a
// process on 127.0.0.1, as a cluster would have them for a pod.
func loopbackEndpointSlice(namespace, name string, port, target int) []client.Object {
	portName := "main"
	tcp := corev1.ProtocolTCP
	p := int32(target)
	ready := true
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: int32(port), Protocol: tcp}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name + "-local", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p, Protocol: &tcp}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	}
}

func port(t *testing.T, addr string) int {
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func getEcho(c *http.Client, req *http.Request, want int) (*harness.EchoRequest, error) {
	resp, err := c.Do(req.Clone(context.Background()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s: status %d, want %d: %s", req.URL, resp.StatusCode, want, body)
	}
	return harness.DecodeEcho(body)
}

// eventuallyEcho retries until the configuration has reached Envoy.
func eventuallyEcho(t *testing.T, c *http.Client, req *http.Request, want int) *harness.EchoRequest {
	t.Helper()
	var echo *harness.EchoRequest
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		echo, err = getEcho(c, req, want)
		return err
	})
	return echo
}

// wantHeaders reports every header of want whose first value differs ("" for
// absent).
func wantHeaders(h http.Header, want map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got := h.Get(k); got != want[k] {
			errs = append(errs, fmt.Errorf("%s = %q, want %q", k, got, want[k]))
		}
	}
	return errors.Join(errs...)
}

// eventuallyStatus retries until a GET of url answers with status want.
func eventuallyStatus(t *testing.T, c *http.Client, url string, want int) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		code, err := statusCode(c, url)
		if err != nil {
			return err
		}
		if code != want {
			return fmt.Errorf("%s: status %d, want %d", url, code, want)
		}
		return nil
	})
}

func statusCode(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// checks sums portcullis_authserver_checks_total from a metrics endpoint.
func checks(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "portcullis_authserver_checks_total{") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += f
	}
	return int(total)
}

func runCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
