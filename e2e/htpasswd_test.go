package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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

// bcrypt (cost 10) hashes of the passwords in their names, made with
// golang.org/x/crypto/bcrypt (htpasswd -B -C 10 makes the same kind).
const (
	aliceHash1 = "$2a$10$G4WzWJz8IUWoVa5V4mH2LeDvgejYSHoEKA4pl2eaDdWElksaCSy1m" // alice-pw-1
	aliceHash2 = "$2a$10$TpW2PelfPGmD/WgSU0JLhu9ieFiSbu.D8VBUBJUgeba9uWA2XMNzy" // alice-pw-2
	olgaHash   = "$2a$10$3k/2TFQkqRD0Du.pGLPXKO/nkCCEaxnilCKzlv6kf/VPBe6NYwCaK" // olga-pw
)

const htpasswdNamespace = "portcullis-htpasswd"

// htpasswdSecret is a Secret as Contour's authserver selects it.
func htpasswdSecret(name, realm, auth string) *corev1.Secret {
	annotations := map[string]string{"projectcontour.io/auth-type": "basic"}
	if realm != "" {
		annotations["projectcontour.io/auth-realm"] = realm
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: htpasswdNamespace, Name: name, Annotations: annotations,
			Labels: map[string]string{"portcullis.dev/users": "true"}},
		Data: map[string][]byte{"auth": []byte(auth)},
	}
}

// TestHtpasswdThroughEnvoy runs `authserver htpasswd` reading Secrets from
// the real API server that also feeds the control plane (kubernetes
// provider), behind the real Envoy.
func TestHtpasswdThroughEnvoy(t *testing.T) {
	ctx := context.Background()
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-e2e")

	// The users exist before the server starts (initial list) and change
	// while it runs (watch).
	if err := api.Apply(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: htpasswdNamespace}},
		htpasswdSecret("staff-users", "staff", "alice:"+aliceHash1+"\nthis line is reported and skipped\n"),
		htpasswdSecret("ops-users", "ops", "olga:"+olgaHash+"\n"),
		// Not annotated: never used, although it holds a valid user.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: htpasswdNamespace, Name: "not-for-auth",
			Labels: map[string]string{"portcullis.dev/users": "true"}},
			Data: map[string][]byte{"auth": []byte("mallory:" + olgaHash)}},
		// Annotated but outside --selector: never used either.
		func() *corev1.Secret {
			s := htpasswdSecret("unlabelled", "", "trudy:"+olgaHash)
			s.Labels = nil
			return s
		}(),
	); err != nil {
		t.Fatal(err)
	}

	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	authMetrics := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.StartProcess(t, "authserver-htpasswd", authserver, "htpasswd", "--address", authAddr, "--metrics-address", authMetrics,
		"--kubeconfig", api.KubeconfigPath, "--watch-namespaces", htpasswdNamespace, "--selector", "portcullis.dev/users=true",
		"--auth-realm", "staff", "--strip-authorization")
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitTCP(waitCtx, authAddr); err != nil {
		t.Fatalf("authserver htpasswd: %v", err)
	}

	stack := harness.StartOnAPIServer(t, api)

	h2c := "h2c"
	echoSvc := []contourv1.Service{{Name: "echo", Port: 80}}
	objs := []client.Object{
		ca.Issue(t, "basic.example.com").Secret("default", "basic-tls"),
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: htpasswdNamespace, Name: "htpasswd"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "htpasswd", Port: 9443}}}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "basic"},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{
					Fqdn: "basic.example.com",
					TLS:  &contourv1.TLS{SecretName: "basic-tls"},
					Authorization: &contourv1.AuthorizationServer{
						ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: htpasswdNamespace, Name: "htpasswd"},
						// bcrypt on a busy shared machine: be generous.
						ResponseTimeout: "10s",
					},
				},
				Routes: []contourv1.Route{
					{Conditions: []contourv1.MatchCondition{{Prefix: "/ops"}}, Services: echoSvc,
						AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"htpasswd.portcullis.dev/realm": "ops", "team": "operations"}}},
					{Services: echoSvc},
				},
			}},
	}
	objs = append(objs, harness.LoopbackExternalName("default", "echo", 80, echo.Port)...)
	objs = append(objs, harness.LoopbackExternalName(htpasswdNamespace, "htpasswd", 9443, harness.Port(t, authAddr))...)
	if err := stack.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := stack.HTTPS(ca.CertPEM)

	// get sends a request with Basic credentials (none when user is "").
	get := func(path, user, password string, header http.Header) *http.Request {
		req := harness.MustRequest(t, "https://basic.example.com"+path)
		for k, vs := range header {
			req.Header[k] = vs
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		return req
	}
	// eventuallyDenied waits for a 401 carrying the realm's challenge.
	eventuallyDenied := func(t *testing.T, req *http.Request, realm string) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			resp, err := https.Do(req.Clone(ctx))
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				return fmt.Errorf("%s: status %d, want 401: %s", req.URL.Path, resp.StatusCode, body)
			}
			if got, want := resp.Header.Get("WWW-Authenticate"), `Basic realm="`+realm+`"`; !strings.HasPrefix(got, want) {
				return fmt.Errorf("WWW-Authenticate = %q, want it to start with %s", got, want)
			}
			return nil
		})
	}

	t.Run("no credentials: 401 with the realm's challenge", func(t *testing.T) {
		eventuallyDenied(t, get("/", "", "", nil), "staff")
	})

	t.Run("valid credentials reach the upstream with Auth-Username and Auth-Realm", func(t *testing.T) {
		echoReq := harness.EventuallyEcho(t, https, get("/page", "alice", "alice-pw-1", nil), http.StatusOK)
		if got := echoReq.Headers.Values("Auth-Username"); len(got) != 1 || got[0] != "alice" {
			t.Errorf("Auth-Username = %q, want [alice]", got)
		}
		// No Authorization: the server runs with --strip-authorization.
		if err := harness.WantHeaders(echoReq.Headers, map[string]string{"Auth-Realm": "staff", "Auth-Handler": "htpasswd", "Authorization": ""}); err != nil {
			t.Error(err)
		}
	})

	t.Run("wrong password, unknown user and unselected Secrets: 401", func(t *testing.T) {
		eventuallyDenied(t, get("/", "alice", "alice-pw-2", nil), "staff")
		eventuallyDenied(t, get("/", "nobody", "alice-pw-1", nil), "staff")
		eventuallyDenied(t, get("/", "mallory", "olga-pw", nil), "staff") // not annotated
		eventuallyDenied(t, get("/", "trudy", "olga-pw", nil), "staff")   // outside --selector
	})

	t.Run("a client-supplied Auth-Username never reaches the upstream", func(t *testing.T) {
		forged := http.Header{"Auth-Username": {"admin"}, "Auth-Realm": {"ops"}}
		echoReq := harness.EventuallyEcho(t, https, get("/", "alice", "alice-pw-1", forged), http.StatusOK)
		if got := echoReq.Headers.Values("Auth-Username"); len(got) != 1 || got[0] != "alice" {
			t.Errorf("upstream saw Auth-Username %q, want only alice", got)
		}
		if got := echoReq.Headers.Values("Auth-Realm"); len(got) != 1 || got[0] != "staff" {
			t.Errorf("upstream saw Auth-Realm %q, want only staff", got)
		}
		// Without valid credentials the forged header gets nowhere either.
		eventuallyDenied(t, get("/", "", "", forged), "staff")
	})

	t.Run("two realms on two routes", func(t *testing.T) {
		echoReq := harness.EventuallyEcho(t, https, get("/ops/x", "olga", "olga-pw", nil), http.StatusOK)
		// The realm setting in the route's context does not leak upstream.
		if err := harness.WantHeaders(echoReq.Headers, map[string]string{"Auth-Realm": "ops", "Auth-Context-Team": "operations",
			"Auth-Context-Htpasswd-Portcullis-Dev-Realm": ""}); err != nil {
			t.Errorf("/ops: %v", err)
		}
		eventuallyDenied(t, get("/ops/x", "alice", "alice-pw-1", nil), "ops") // staff user, ops route
		eventuallyDenied(t, get("/page", "olga", "olga-pw", nil), "staff")    // ops user, staff route
	})

	t.Run("rotating the Secret's password applies without a restart", func(t *testing.T) {
		if err := api.Apply(ctx, htpasswdSecret("staff-users", "staff", "alice:"+aliceHash2+"\n")); err != nil {
			t.Fatal(err)
		}
		harness.EventuallyEcho(t, https, get("/", "alice", "alice-pw-2", nil), http.StatusOK)
		// The old password was cached as a success; the new hash changes
		// the cache key, so it fails at once.
		eventuallyDenied(t, get("/", "alice", "alice-pw-1", nil), "staff")
	})

	t.Run("Secret updates never fail a check in flight", func(t *testing.T) {
		reloads := func() float64 {
			return metric(t, "http://"+authMetrics+"/metrics", "portcullis_authserver_htpasswd_reloads_total")
		}
		harness.EventuallyEcho(t, https, get("/", "alice", "alice-pw-2", nil), http.StatusOK)
		stop, done := make(chan struct{}), make(chan struct{})
		var okCount, failures int
		var firstFailure string
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, err := statusCodeOf(https, get("/", "alice", "alice-pw-2", nil))
				if err == nil && code == http.StatusOK {
					okCount++
					continue
				}
				failures++
				if firstFailure == "" {
					firstFailure = fmt.Sprintf("status %d, error %v", code, err)
				}
			}
		}()
		for i := range 5 {
			before := reloads()
			// alice stays; another user comes and goes with each version.
			if err := api.Apply(ctx, htpasswdSecret("staff-users", "staff",
				fmt.Sprintf("alice:%s\nuser%d:%s\n", aliceHash2, i, olgaHash))); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, 30*time.Second, func() error {
				if after := reloads(); after <= before {
					return fmt.Errorf("reloads_total still %v", after)
				}
				return nil
			})
		}
		close(stop)
		<-done
		if failures > 0 || okCount == 0 {
			t.Fatalf("%d of %d checks failed during 5 reloads (first: %s)", failures, failures+okCount, firstFailure)
		}
		t.Logf("%d checks, none failed, during 5 reloads", okCount)
	})

	t.Run("metrics report users, the skipped line and the cache", func(t *testing.T) {
		resp, err := http.Get("http://" + authMetrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			"portcullis_authserver_htpasswd_users 3", // alice and user4 (staff), olga (ops)
			`portcullis_authserver_htpasswd_load_errors_total{reason="malformed_line"} 1`,
			`portcullis_authserver_checks_total{backend="htpasswd",result="allowed"}`,
			`portcullis_authserver_htpasswd_cache_lookups_total{result="hit"}`,
		} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestHtpasswdExample runs examples/htpasswd as its README says (file
// provider, users from the example's htpasswd file), on free ports.
func TestHtpasswdExample(t *testing.T) {
	repo := harness.RepoRoot(t)
	echo := harness.StartEcho(t, "echo")
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.StartProcess(t, "authserver-htpasswd", authserver, "htpasswd", "--secrets", "off",
		"--htpasswd-file", filepath.Join(repo, "examples/htpasswd/users.htpasswd"), "--auth-realm", "staff",
		"--address", authAddr, "--metrics-address", "")

	// The example's resources, with its fixed loopback ports replaced.
	dir := t.TempDir()
	ports := strings.NewReplacer("port: 19000", fmt.Sprintf("port: %d", echo.Port), "port: 19445", "port: "+strconv.Itoa(harness.Port(t, authAddr)))
	for _, f := range []string{"quickstart/tls-secret.yaml", "quickstart/upstreams.yaml", "htpasswd/resources/extensionservice.yaml", "htpasswd/resources/httpproxy.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(f, "/", "-")), []byte(ports.Replace(string(b))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	caPEM, err := os.ReadFile(filepath.Join(repo, "examples/quickstart/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	https := harness.HTTPSClient(caPEM, httpsAddr)

	req := func(path, user, password string) *http.Request {
		r := harness.MustRequest(t, "https://echo.example.com"+path)
		if user != "" {
			r.SetBasicAuth(user, password)
		}
		return r
	}
	challenge := func(path, wantRealm string) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			resp, err := https.Do(req(path, "", ""))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != `Basic realm="`+wantRealm+`", charset="UTF-8"` {
				return fmt.Errorf("%s: %d %q, want 401 with realm %s", path, resp.StatusCode, got, wantRealm)
			}
			return nil
		})
	}
	challenge("/hello", "staff")
	challenge("/ops/x", "ops")
	if got := harness.EventuallyEcho(t, https, req("/hello", "alice", "alice-password"), http.StatusOK); got.Headers.Get("Auth-Username") != "alice" ||
		got.Headers.Get("Auth-Realm") != "staff" || !strings.HasPrefix(got.Headers.Get("Authorization"), "Basic ") {
		t.Errorf("alice on /hello: upstream headers %v", got.Headers)
	}
	if got := harness.EventuallyEcho(t, https, req("/ops/x", "olga", "olga-password"), http.StatusOK); got.Headers.Get("Auth-Realm") != "ops" || got.Headers.Get("Auth-Context-Team") != "operations" {
		t.Errorf("olga on /ops: upstream headers %v", got.Headers)
	}
	if code, err := harness.StatusCode(https, "https://echo.example.com/hello"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, %v", code, err)
	}
	if resp, err := https.Do(req("/hello", "alice", "wrong")); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	harness.EventuallyEcho(t, https, req("/public/x", "", ""), http.StatusOK)
}

func statusCodeOf(c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req.Clone(context.Background()))
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // only the status counts
	resp.Body.Close()
	return resp.StatusCode, nil
}
