package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// rawGet sends one HTTP/1.1 request with the request target exactly as
// given (no client-side cleaning) and returns the status and body.
func rawGet(addr, host, target string) (int, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// TestPathTricksDoNotEscapeAnUnauthorizedRoute: /public has authorization
// off, everything else is denied by the auth server. No spelling of a path
// outside /public (dot segments, encoded dots and slashes, doubled slashes,
// backslashes) may reach the upstream as a /public request, as the upstream
// would read it.
func TestPathTricksDoNotEscapeAnUnauthorizedRoute(t *testing.T) {
	st := startGlobalAuthFileStack(t)
	httpAddr, dir, objs := st.httpAddr, st.dir, st.objs
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "app.example.com"},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}, Services: echo},
				{AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}}, Services: echo},
			},
		}})
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if code, _, err := rawGet(httpAddr, "app.example.com", "/public/x"); err != nil || code != http.StatusOK {
			return fmt.Errorf("/public/x: %d %v", code, err)
		}
		if code, _, err := rawGet(httpAddr, "app.example.com", "/admin"); err != nil || code != http.StatusForbidden {
			return fmt.Errorf("/admin: %d %v", code, err)
		}
		return nil
	})
	for _, target := range []string{
		"/public/../admin", "/public/./../admin", "/public/%2e%2e/admin", "/public/%2E%2E/admin", "/public/.%2e/admin",
		"/public%2F..%2Fadmin", "/public%2f..%2fadmin", "/public/..%2Fadmin", "/public%5C..%5Cadmin", "/public\\..\\admin",
		"//public/../admin", "/public//../admin", "/public/%252e%252e/admin", "/public/..;/admin", "/public/..%00/admin",
		"/PUBLIC/../admin", "/public/../admin?x=/public", "/public#/../admin",
	} {
		code, body, err := rawGet(httpAddr, "app.example.com", target)
		if err != nil {
			t.Logf("%s: %v", target, err)
			continue
		}
		if code != http.StatusOK {
			t.Logf("%s: %d", target, code)
			continue
		}
		var e harness.EchoRequest
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("%s: 200 with %q", target, body)
			continue
		}
		// How an upstream reads the path: decoded once (the echo's Path is
		// Go's), backslashes as slashes, dot segments resolved.
		if clean := path.Clean(strings.ReplaceAll(e.Path, "\\", "/")); clean != "/public" && !strings.HasPrefix(clean, "/public/") {
			t.Errorf("%s: reached the upstream without authorization as %q (read as %q)", target, e.Path, clean)
		} else {
			t.Logf("%s: 200, upstream path %q", target, e.Path)
		}
	}
}

// TestSNIAndHostMismatch: a client that connects with the SNI of a host
// without authorization and asks for another host (domain fronting) gets
// 404 from that SNI's chain, never the other host's routes without their
// authorization.
func TestSNIAndHostMismatch(t *testing.T) {
	c := harness.StartComponents(t)
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	h2c := "h2c"
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	cert := c.CA.Issue(t, "open.example.com", "locked.example.com")
	objs := []client.Object{cert.Secret("default", "server-tls"),
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9000}}}}}
	objs = append(objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, "auth-h2c", 9000, harness.Port(t, c.AuthH2C))...)
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, c.Echo.Port)...)
	host := func(name string, auth *contourv1.AuthorizationServer) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", TLS: &contourv1.TLS{SecretName: "server-tls"}, Authorization: auth},
				Routes:      []contourv1.Route{{Services: echo}},
			}}
	}
	objs = append(objs, host("open", nil), host("locked", &contourv1.AuthorizationServer{
		ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
		AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}},
	}))
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	https := harness.HTTPSClient(c.CA.CertPEM, httpsAddr)
	want := func(url, hostHeader string, code int) error {
		req := harness.MustRequest(t, url)
		req.Host = hostHeader
		resp, err := https.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			return fmt.Errorf("%s with Host %s: %d, want %d", url, hostHeader, resp.StatusCode, code)
		}
		return nil
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if err := want("https://open.example.com/", "open.example.com", http.StatusOK); err != nil {
			return err
		}
		return want("https://locked.example.com/", "locked.example.com", http.StatusForbidden)
	})
	for _, h := range []string{"locked.example.com", "LOCKED.example.com", "locked.example.com:443", "locked.example.com."} {
		if err := want("https://open.example.com/", h, http.StatusNotFound); err != nil {
			t.Error(err)
		}
	}
}
