package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const rollingNamespace = "portcullis-rolling"

// TestRollingRestartOfExtensions is fault 3 of the production shape: an
// HTTPS virtual host whose requests must be authorized by the auth server
// and processed by extprocserver, both fail closed (failOpen false), each
// server two replicas: two processes as two endpoints of its Service.
// Under steady load, each replica of the auth server, then each one of
// extprocserver, is replaced in turn as a rolling update does: SIGTERM,
// wait for it to exit, start a new one on the same address, wait until it
// is ready. No request may fail, and each one must have been authorized
// and processed (the upstream sees both servers' headers).
func TestRollingRestartOfExtensions(t *testing.T) {
	ctx := context.Background()
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-e2e")
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")

	type replica struct {
		*harness.Process
		addr, health string // gRPC address; /healthz URL
	}
	var auths, procs []replica
	for i := range 2 {
		addr, metrics := harness.FreeAddr(t), harness.FreeAddr(t)
		p := harness.StartProcess(t, fmt.Sprintf("authserver-%d", i), authserver, "testserver", "--address", addr, "--metrics-address", metrics)
		auths = append(auths, replica{p, addr, "http://" + metrics + "/healthz"})
		e := harness.StartExtProcServer(t, markingProcessor("extproc"))
		procs = append(procs, replica{e.Process, e.Addr, "http://" + e.MetricsAddr + "/healthz"})
	}
	ready := func(r replica) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := harness.WaitHTTP(ctx, r.health, http.StatusOK); err != nil {
			t.Fatalf("%s not ready: %v", r.Name, err)
		}
	}
	for _, r := range append(append([]replica{}, auths...), procs...) {
		ready(r)
	}

	dir := harness.Dir(t.TempDir())
	httpsAddr := harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", harness.FreeAddr(t), httpsAddr, "--provider", "file", "-f", string(dir))
	envoy := harness.StartEnvoyOn(t, cp.XDSAddr)
	h2c := "h2c"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollingNamespace}},
		ca.Issue(t, "app.example.com").Secret(rollingNamespace, "app-tls"),
	}
	objs = append(objs, harness.LoopbackEndpointSlice(rollingNamespace, "echo", 80, echo.Port)...)
	objs = append(objs, loopbackReplicas(t, rollingNamespace, "auth", 9443, auths[0].addr, auths[1].addr)...)
	objs = append(objs, loopbackReplicas(t, rollingNamespace, "extproc", 9000, procs[0].addr, procs[1].addr)...)
	for name, port := range map[string]int{"auth": 9443, "extproc": 9000} {
		objs = append(objs, &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: rollingNamespace, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: port}}}})
	}
	objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: rollingNamespace, Name: "app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: "app.example.com",
				TLS:  &contourv1.TLS{SecretName: "app-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "auth"},
					ResponseTimeout:     "5s",
					FailOpen:            false,
				},
				ExtProc: &contourv1.ExternalProcessor{Processor: &contourv1.ExtProc{
					GRPCService: &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "extproc"},
						ResponseTimeout: "5s", FailOpen: false},
					ProcessingMode: &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSend},
				}},
			},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}})
	if err := dir.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := harness.HTTPSClient(ca.CertPEM, httpsAddr)
	check := func(ctx context.Context, _ int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://app.example.com/", nil)
		if err != nil {
			return err
		}
		resp, err := https.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		e, err := harness.DecodeEcho(body)
		if err != nil {
			return err
		}
		if got := e.Headers.Get("Auth-Handler"); got != "testserver" {
			return fmt.Errorf("the upstream saw Auth-Handler %q: not authorized by the auth server", got)
		}
		if got, res := e.Headers.Get("X-Processed-By"), resp.Header.Get("X-Response-Processed-By"); got != "extproc" || res != "extproc" {
			return fmt.Errorf("processed by %q (request), %q (response): want extproc", got, res)
		}
		return nil
	}
	harness.Eventually(t, 30*time.Second, func() error { return check(ctx, 0) })

	// What failed, by kind (the status, or the client's error).
	var mu sync.Mutex
	failures := map[string]int{}
	load := harness.StartSteadyLoad(4, 60*time.Second, func(ctx context.Context, w int) error {
		err := check(ctx, w)
		if err != nil {
			kind, _, _ := strings.Cut(err.Error(), ":")
			mu.Lock()
			failures[kind]++
			mu.Unlock()
		}
		return err
	})
	time.Sleep(3 * time.Second)
	var took []string
	for _, r := range append(append([]replica{}, auths...), procs...) {
		start := time.Now()
		r.Stop() // SIGTERM, then the exit
		stopped := time.Since(start)
		r.Start()
		ready(r)
		took = append(took, fmt.Sprintf("%s stopped in %v, replaced in %v", r.Name, stopped.Round(time.Millisecond), time.Since(start).Round(time.Millisecond)))
		if err := r.ExitErr(); err != nil {
			t.Errorf("%s: the replaced process exited with %v", r.Name, err)
		}
		// The new replica takes requests before the next one goes.
		time.Sleep(3 * time.Second)
	}
	rolled := time.Now()
	r := load.Wait()
	t.Logf("rolling restart, one replica at a time: %v; load went on %v after the last one", took, 60*time.Second-time.Since(rolled))
	t.Logf("load: %s", r)
	if r.Requests == 0 || r.Errors != 0 {
		t.Errorf("load: %s; want requests and none failed (failures by kind: %v)", r, failures)
	}
	// The calls Envoy sent again, and those it could not: Envoy's default
	// of 3 retries in flight per cluster failed checks here before the
	// ExtensionService clusters got a retry budget.
	for _, name := range []string{"auth", "extproc"} {
		stat := func(s string) int64 {
			v, err := envoy.Stat("cluster.extension/" + rollingNamespace + "/" + name + "." + s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		retries, overflow := stat("upstream_rq_retry"), stat("upstream_rq_retry_overflow")
		t.Logf("%s: %d calls sent again, %d connections refused", name, retries, stat("upstream_cx_connect_fail"))
		if retries == 0 || overflow != 0 {
			t.Errorf("%s: %d calls sent again, %d not for want of a retry budget; want some and none", name, retries, overflow)
		}
	}
}

// loopbackReplicas is a Service and one EndpointSlice per replica, each
// endpoint 127.0.0.1 on the replica's port (the ports differ, so each
// replica has a slice of its own, as a cluster would have it for pods on
// one node's host network).
func loopbackReplicas(t *testing.T, namespace, name string, port int, addrs ...string) []client.Object {
	t.Helper()
	objs := harness.LoopbackEndpointSlice(namespace, name, port, harness.Port(t, addrs[0]))[:1]
	for i, a := range addrs {
		slice := harness.LoopbackEndpointSlice(namespace, name, port, harness.Port(t, a))[1].(*discoveryv1.EndpointSlice)
		slice.Name = fmt.Sprintf("%s-%d", name, i)
		objs = append(objs, slice)
	}
	return objs
}
