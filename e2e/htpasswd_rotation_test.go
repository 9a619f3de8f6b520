package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHtpasswdRotationUnderLoad is fault 4 of the production shape for the
// htpasswd Secret: under steady load from clients sending alice's
// password, the Secret is replaced by one with a new password for alice
// and the old one gone. A client whose old password is refused takes the
// new one and sends again at once (the request counts once, with the
// answer to the new password): no request may fail, so the new password
// must work as soon as the old one is refused. The old password must be
// refused within a bound, and stay refused.
func TestHtpasswdRotationUnderLoad(t *testing.T) {
	ctx := context.Background()
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-e2e")
	if err := api.Apply(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: htpasswdNamespace}},
		htpasswdSecret("staff-users", "staff", "alice:"+aliceHash1+"\n")); err != nil {
		t.Fatal(err)
	}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr, authMetrics := harness.FreeAddr(t), harness.FreeAddr(t)
	harness.StartProcess(t, "authserver-htpasswd", authserver, "htpasswd", "--address", authAddr, "--metrics-address", authMetrics,
		"--kubeconfig", api.KubeconfigPath, "--watch-namespaces", htpasswdNamespace, "--selector", "portcullis.dev/users=true",
		"--auth-realm", "staff")
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitTCP(waitCtx, authAddr); err != nil {
		t.Fatalf("authserver htpasswd: %v", err)
	}
	stack := harness.StartOnAPIServer(t, api)

	h2c := "h2c"
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
						ResponseTimeout:     "10s", // bcrypt on a busy shared machine
					},
				},
				Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
			}},
	}
	objs = append(objs, harness.LoopbackExternalName("default", "echo", 80, echo.Port)...)
	objs = append(objs, harness.LoopbackExternalName(htpasswdNamespace, "htpasswd", 9443, harness.Port(t, authAddr))...)
	if err := api.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := stack.HTTPS(ca.CertPEM)
	get := func(ctx context.Context, password string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://basic.example.com/", nil)
		if err != nil {
			return 0, err
		}
		req.SetBasicAuth("alice", password)
		return statusCodeOf(https, req)
	}
	harness.EventuallyEcho(t, https, func() *http.Request {
		r := harness.MustRequest(t, "https://basic.example.com/")
		r.SetBasicAuth("alice", "alice-pw-1")
		return r
	}(), http.StatusOK)

	// The clients' password: the old one until a client sees it refused.
	var password atomic.Pointer[string]
	old, rotated := "alice-pw-1", "alice-pw-2"
	password.Store(&old)
	var (
		mu       sync.Mutex
		switches int // requests whose old password was refused, then sent again
	)
	errRefusedBeforeRotation := errors.New("the old password was refused before the rotation")
	var applied atomic.Bool
	load := harness.StartSteadyLoad(4, 25*time.Second, func(ctx context.Context, _ int) error {
		pw := *password.Load()
		code, err := get(ctx, pw)
		if err != nil {
			return err
		}
		if code == http.StatusUnauthorized && pw == old {
			if !applied.Load() {
				return errRefusedBeforeRotation
			}
			// The rotation, seen by this client: it takes the new password.
			password.Store(&rotated)
			mu.Lock()
			switches++
			mu.Unlock()
			if code, err = get(ctx, rotated); err != nil {
				return err
			}
		}
		if code != http.StatusOK {
			return fmt.Errorf("password %s: status %d", pw, code)
		}
		return nil
	})
	time.Sleep(5 * time.Second)

	reloadsBefore := metric(t, "http://"+authMetrics+"/metrics", "portcullis_authserver_htpasswd_reloads_total")
	applied.Store(true)
	start := time.Now()
	if err := api.Apply(ctx, htpasswdSecret("staff-users", "staff", "alice:"+aliceHash2+"\n")); err != nil {
		t.Fatal(err)
	}
	// The old password refused: by a probe of its own, so the bound does
	// not depend on the load's clients.
	var refusedAfter time.Duration
	harness.Eventually(t, 30*time.Second, func() error {
		code, err := get(ctx, old)
		if err != nil {
			return err
		}
		if code != http.StatusUnauthorized {
			return fmt.Errorf("the old password: status %d, want 401", code)
		}
		refusedAfter = time.Since(start)
		return nil
	})
	if after := metric(t, "http://"+authMetrics+"/metrics", "portcullis_authserver_htpasswd_reloads_total"); after <= reloadsBefore {
		t.Errorf("reloads_total %v after the rotation, was %v", after, reloadsBefore)
	}
	r := load.Wait()
	// Still refused at the end: no cached success brings it back.
	if code, err := get(ctx, old); err != nil || code != http.StatusUnauthorized {
		t.Errorf("the old password at the end of the load: status %d, %v; want 401", code, err)
	}
	if p := *password.Load(); p != rotated {
		t.Errorf("the load's clients never saw the old password refused (still sending %s)", p)
	}
	t.Logf("htpasswd Secret rotated: the old password refused %v after the update; %d requests refused with it and sent again with the new one",
		refusedAfter.Round(time.Millisecond), switches)
	t.Logf("load: %s", r)
	if r.Requests == 0 || r.Errors != 0 {
		t.Errorf("load: %s; want requests and none failed", r)
	}
}
