package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	chartRelease = "portcullis" // the chart's full name is the release's
	quickstartNS = "quickstart" // the demo's application
	testserverES = chartRelease + "-authserver"
)

// TestClusterChart installs charts/portcullis into the one-machine cluster
// with the Helm CLI, as users do, with the images of make image: the Pods
// start (the Envoy Pods' bootstrap init container, both containers' and
// the auth server's probes pass), the control plane writes statuses, and
// the demo's requests (examples/quickstart: a protected route, a public
// one, a denial, the HTTPS redirect) go through the Pod-networked Envoys,
// reached at their Service's ClusterIP from the host, to an echo Pod. The
// chart's NetworkPolicies are on (networkPolicy.enabled) and enforced:
// Envoy gets its configuration over xDS and reaches the auth server, a
// Pod without Envoy's labels reaches neither (NetworkPolicies). An
// Envoy Pod deleted under load through that Service drains with no failed
// request (EnvoyPodDeletedUnderLoad). Then helm upgrade with changed
// values takes effect (among them TLS between Envoy and the auth server:
// the protected route is still allowed), and helm uninstall leaves none
// of the release's objects behind.
func TestClusterChart(t *testing.T) {
	c := harness.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cs := c.Clientset

	start := time.Now()
	install := []string{"install", chartRelease, "charts/portcullis", "--namespace", chartNamespace, "--create-namespace",
		"--set", "authserver.enabled=true", "--set", "authserver.backend=testserver",
		"--set", fmt.Sprintf("envoy.drainSeconds=%d", int(envoyDrain/time.Second)),
		"--set", "networkPolicy.enabled=true"}
	if out, err := c.Helm(t, install...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	waitAvailable(ctx, t, c, chartRelease, 2)
	waitAvailable(ctx, t, c, testserverES, 2)
	t.Logf("helm install: Deployments available in %s", time.Since(start).Round(100*time.Millisecond))
	// The bootstrap init container wrote Envoy's configuration and exited.
	for _, p := range envoyPods(ctx, t, c) {
		if len(p.Status.InitContainerStatuses) != 1 || p.Status.InitContainerStatuses[0].State.Terminated == nil ||
			p.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 {
			t.Errorf("pod %s: init container statuses %+v, want bootstrap terminated with 0", p.Name, p.Status.InitContainerStatuses)
		}
	}

	// The quickstart's application: an echo Deployment and Service, the
	// TLS Secret and the HTTPProxy, protected by the chart's testserver.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: quickstartNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the namespace's default ServiceAccount", func() error {
		_, err := cs.CoreV1().ServiceAccounts(quickstartNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	secret := quickstartObject[*corev1.Secret](t, "tls-secret.yaml")
	proxy := quickstartObject[*contourv1.HTTPProxy](t, "httpproxy.yaml")
	proxy.Spec.VirtualHost.Authorization.ExtensionServiceRef = contourv1.ExtensionServiceReference{Namespace: chartNamespace, Name: testserverES}
	echoSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	for _, o := range []client.Object{secret, proxy, echoSvc, echoDeployment()} {
		o.SetNamespace(quickstartNS)
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	waitAvailable(ctx, t, c, "echo", 2, quickstartNS)

	// The control plane's statuses: the HTTPProxy and the chart's
	// ExtensionService valid.
	waitFor(t, time.Minute, "the HTTPProxy's status valid", func() error {
		var p contourv1.HTTPProxy
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(proxy), &p); err != nil {
			return err
		}
		if p.Status.CurrentStatus != "valid" {
			return fmt.Errorf("status %q: %s %+v", p.Status.CurrentStatus, p.Status.Description, p.Status.Conditions)
		}
		return nil
	})

	envoySvc, err := cs.CoreV1().Services(chartNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := envoySvc.Spec.ClusterIP
	demoRequests(t, clusterIP, 443, 80)
	// Every Envoy Pod serves (the ClusterIP balances connections).
	for _, p := range envoyPods(ctx, t, c) {
		https := harness.HTTPSClient(quickstartCA(t), net.JoinHostPort(p.Status.PodIP, "8443"))
		harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://echo.example.com/public/"+p.Name), 200)
	}
	t.Run("NetworkPolicies", func(t *testing.T) {
		chartNetworkPolicies(ctx, t, c)
	})
	t.Run("EnvoyPodDeletedUnderLoad", func(t *testing.T) {
		envoyPodDeletedUnderLoad(ctx, t, c, clusterIP)
	})
	waitAvailable(ctx, t, c, chartRelease, 2)

	// helm upgrade: the Service's HTTPS port changes (so does the
	// redirect's), and the GatewayClass is created now that the Gateway
	// API CRDs are there; the control plane accepts it. TLS between Envoy
	// and the auth server is turned on (authserver.tls): the auth server's
	// Pods roll (beside Envoy's) with the chart's certificate, ready by
	// their HTTP probes, and the ExtensionService turns h2 with
	// validation; the protected route is still allowed by the testserver,
	// which now speaks TLS only.
	// The xDS Secrets the chart made (xds.tls.generate) are kept by the
	// upgrade: new ones would not match the connected Envoys' CA.
	xdsSecret := func() []byte {
		s, err := cs.CoreV1().Secrets(chartNamespace).Get(ctx, chartRelease+"-xds-server", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data["tls.crt"]
	}
	xdsCert := xdsSecret()
	start = time.Now()
	upgrade := []string{"upgrade", chartRelease, "charts/portcullis", "--namespace", chartNamespace, "--reuse-values",
		"--set", "envoy.service.httpsPort=9443", "--set", "gatewayAPI.gatewayClass.create=true",
		"--set", "authserver.tls.enabled=true"}
	if out, err := c.Helm(t, upgrade...); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	waitFor(t, 3*time.Minute, "the upgraded Envoy Deployment rolled out", func() error {
		d, err := cs.AppsV1().Deployments(chartNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.Replicas != 2 {
			return fmt.Errorf("%d updated, %d available, %d in all", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas)
		}
		return nil
	})
	envoyRolled := time.Now()
	waitFor(t, 3*time.Minute, "the auth server rolled out with TLS", func() error {
		d, err := cs.AppsV1().Deployments(chartNamespace).Get(ctx, testserverES, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.Replicas != 2 {
			return fmt.Errorf("%d updated, %d available, %d in all; pods: %s", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas, podStates(ctx, c, chartNamespace, d))
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--tls-cert-path=/etc/authserver-tls/tls.crt") {
			return fmt.Errorf("the auth server's args %v have no TLS", args)
		}
		return nil
	})
	t.Logf("helm upgrade: rolled out in %s (the auth server with TLS %s after Envoy)", time.Since(start).Round(100*time.Millisecond), time.Since(envoyRolled).Round(100*time.Millisecond))
	waitFor(t, time.Minute, "the ExtensionService h2 with validation, valid", func() error {
		var es v1alpha1.ExtensionService
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: chartNamespace, Name: testserverES}, &es); err != nil {
			return err
		}
		v := es.Spec.UpstreamValidation
		if es.Spec.Protocol == nil || *es.Spec.Protocol != "h2" || v == nil || v.SubjectName != testserverES+"."+chartNamespace+".svc" || v.CACertificate != testserverES+"-tls" {
			return fmt.Errorf("protocol %v, validation %+v", es.Spec.Protocol, v)
		}
		for _, cond := range es.Status.Conditions {
			if cond.Type == contourv1.ValidConditionType && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == es.Generation {
				return nil
			}
		}
		return fmt.Errorf("not Valid for generation %d: %+v", es.Generation, es.Status.Conditions)
	})
	demoRequests(t, clusterIP, 9443, 80)
	if !bytes.Equal(xdsSecret(), xdsCert) {
		t.Error("helm upgrade made new xDS certificates")
	}
	waitFor(t, time.Minute, "the GatewayClass accepted", func() error {
		var gc gwapiv1.GatewayClass
		if err := c.Client.Get(ctx, client.ObjectKey{Name: "portcullis"}, &gc); err != nil {
			return err
		}
		for _, cond := range gc.Status.Conditions {
			if cond.Type == string(gwapiv1.GatewayClassConditionStatusAccepted) && cond.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", gc.Status.Conditions)
	})

	// helm uninstall: nothing of the release is left, in its namespace or
	// cluster-wide (but the CRDs, which Helm keeps on purpose).
	if err := releaseLeftovers(ctx, c); err == nil || !strings.Contains(err.Error(), "ClusterRole portcullis") || !strings.Contains(err.Error(), "GatewayClass portcullis") {
		t.Fatalf("before helm uninstall, the release's objects (ClusterRole, GatewayClass...) should be found: %v", err)
	}
	if out, err := c.Helm(t, "uninstall", chartRelease, "--namespace", chartNamespace, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	waitFor(t, 2*time.Minute, "nothing of the release left", func() error {
		return releaseLeftovers(ctx, c)
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, quickstartNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// chartNetworkPolicies checks the chart's NetworkPolicies from a Pod of
// the release's namespace with the release's labels but not Envoy's
// component: the control plane's xDS port and the auth server's gRPC port
// (through their Services) do not let it connect, the auth server's
// metrics port (metricsFrom empty: any source) does. Envoy's own
// connections are the demo's requests: its configuration over xDS, the
// protected route's check by the auth server.
func chartNetworkPolicies(ctx context.Context, t *testing.T, c *harness.KubeCluster) {
	svcAddr := func(name, port string) string {
		s, err := c.Clientset.CoreV1().Services(chartNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return net.JoinHostPort(s.Spec.ClusterIP, port)
	}
	xds, grpc, metrics := svcAddr(chartRelease+"-xds", "8001"), svcAddr(testserverES, "9443"), svcAddr(testserverES, "9090")
	got := dialFromPods(ctx, t, c.Clientset, chartNamespace, map[string]map[string]string{"np-intruder": {
		"app.kubernetes.io/name": "portcullis", "app.kubernetes.io/instance": chartRelease, "app.kubernetes.io/component": "intruder",
	}}, []string{xds, grpc, metrics})
	checkOpen(t, "a Pod without Envoy's labels", got["np-intruder"], map[string]bool{xds: false, grpc: false, metrics: true})
	if err := c.Clientset.CoreV1().Pods(chartNamespace).Delete(ctx, "np-intruder", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

// envoyDrain is the chart's envoy.drainSeconds in TestClusterChart (30 s
// by default): how long a deleted Envoy Pod drains.
const envoyDrain = 10 * time.Second

// envoyPodDeletedUnderLoad is the Envoy drain fault (fault 5 of
// docs/production-faults.md) in a Pod: one Envoy Pod deleted as kubectl
// delete pod does (the Pod's own grace period) while clients send requests
// through the Envoy Service's ClusterIP, on keep-alive connections and on a
// new connection each. The Pod leaves the Service's ready endpoints at
// once; the chart's drainer fails Envoy's readiness and drains its
// listeners while Envoy's preStop hook keeps it running: the Pod's own
// address answers for the whole drain time, closing connections
// (Connection: close) as it goes, and the Pod goes only after it. No
// request fails, and every answer is the echo's for the request.
func envoyPodDeletedUnderLoad(ctx context.Context, t *testing.T, c *harness.KubeCluster, clusterIP string) {
	ca := quickstartCA(t)
	victim := envoyPods(ctx, t, c)[0]
	get := func(cl *http.Client, path string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, "https://echo.example.com"+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := cl.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, body)
		}
		got, err := harness.DecodeEcho(body)
		if err != nil {
			return nil, err
		}
		if got.Path != path || got.Host != "echo.example.com" {
			return nil, fmt.Errorf("%s: the answer of %s%s", path, got.Host, got.Path)
		}
		return resp, nil
	}
	keepAlive := func(cl *http.Client) *http.Client {
		cl.Transport.(*http.Transport).DisableKeepAlives = false
		return cl
	}

	// 4 workers on a keep-alive connection each, 2 on a new connection
	// per request: the ClusterIP spreads them over both Envoy Pods.
	const keepAlives, fresh = 4, 2
	var clients []*http.Client
	for i := range keepAlives + fresh {
		cl := harness.HTTPSClient(ca, net.JoinHostPort(clusterIP, "443"))
		if i < keepAlives {
			cl = keepAlive(cl)
		}
		clients = append(clients, cl)
	}
	// drainClosed counts the keep-alive workers' answers with Connection:
	// close: only a draining Envoy closes them (the ClusterIP may have put
	// none of them on the deleted Pod: 1 chance in 16, so not asserted).
	var seq, drainClosed atomic.Int64
	load := harness.StartSteadyLoad(len(clients), envoyDrain+15*time.Second, func(_ context.Context, w int) error {
		resp, err := get(clients[w], fmt.Sprintf("/public/drain/%d/%d", w, seq.Add(1)))
		if err == nil && w < keepAlives && resp.Close {
			drainClosed.Add(1)
		}
		return err
	})
	time.Sleep(2 * time.Second)

	start := time.Now()
	if err := c.Clientset.CoreV1().Pods(chartNamespace).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deleted Envoy's own address, on a keep-alive connection, until
	// it stops answering: it serves for the drain time, closing
	// connections as it drains.
	type directRun struct {
		answered, closed int
		failedAfter      time.Duration
		err              error
	}
	directc := make(chan directRun, 1)
	go func() {
		var r directRun
		cl := keepAlive(harness.HTTPSClient(ca, net.JoinHostPort(victim.Status.PodIP, "8443")))
		for i := 0; ; i++ {
			resp, err := get(cl, fmt.Sprintf("/public/direct/%d", i))
			if err != nil {
				r.failedAfter, r.err = time.Since(start), err
				break
			}
			r.answered++
			if resp.Close {
				r.closed++
			}
			time.Sleep(20 * time.Millisecond)
		}
		directc <- r
	}()

	// At once out of the Service's ready endpoints (the EndpointSlice
	// controller, from the Pod's deletion), and not ready itself once the
	// drainer failed Envoy's readiness.
	waitFor(t, 10*time.Second, "the deleted Envoy Pod's endpoint not ready", func() error {
		eps, err := c.Clientset.DiscoveryV1().EndpointSlices(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + chartRelease})
		if err != nil {
			return err
		}
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.TargetRef.Name == victim.Name && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					return fmt.Errorf("ready: %+v", e.Conditions)
				}
			}
		}
		return nil
	})
	t.Logf("the deleted Envoy Pod's endpoint not ready after %s", time.Since(start).Round(10*time.Millisecond))
	waitFor(t, envoyDrain/2, "the deleted Envoy's /ready 503 (draining)", func() error {
		resp, err := http.Get("http://" + net.JoinHostPort(victim.Status.PodIP, "8003") + "/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	waitFor(t, 2*time.Minute, "the deleted Envoy Pod gone", func() error {
		_, err := c.Clientset.CoreV1().Pods(chartNamespace).Get(ctx, victim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	gone := time.Since(start)
	grace := time.Duration(*victim.Spec.TerminationGracePeriodSeconds) * time.Second
	if gone < envoyDrain || gone >= grace {
		t.Errorf("the deleted Envoy Pod went after %s: want its drain time %s (the preStop hook) at least, less than its grace period %s", gone, envoyDrain, grace)
	}
	direct := <-directc
	t.Logf("the deleted Envoy Pod gone after %s; its own address answered %d requests (%d with Connection: close) and stopped after %s (%v)",
		gone.Round(10*time.Millisecond), direct.answered, direct.closed, direct.failedAfter.Round(10*time.Millisecond), direct.err)
	if direct.failedAfter < envoyDrain || direct.closed == 0 {
		t.Errorf("the deleted Envoy's own address answered %d requests, %d with Connection: close, and failed after %s: want answers with Connection: close for the drain time %s",
			direct.answered, direct.closed, direct.failedAfter, envoyDrain)
	}

	r := load.Wait()
	t.Logf("load through the Envoy Service across the Pod's deletion: %s; %d keep-alive connections closed by the drain", r, drainClosed.Load())
	if r.Requests == 0 || r.Errors != 0 {
		t.Errorf("load through the Envoy Service across the Pod's deletion: %s; want requests and none failed", r)
	}
}

// demoRequests sends the quickstart demo's requests (hack/demo.sh) to
// Envoy at ip: HTTPS on httpsPort, plain HTTP on httpPort.
func demoRequests(t *testing.T, ip string, httpsPort, httpPort int) {
	t.Helper()
	https := harness.HTTPSClient(quickstartCA(t), net.JoinHostPort(ip, fmt.Sprint(httpsPort)))
	httpc := harness.HTTPClient(net.JoinHostPort(ip, fmt.Sprint(httpPort)))
	// A protected route: the testserver allowed it and added its headers.
	got := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://echo.example.com/hello"), http.StatusOK)
	if err := harness.WantHeaders(got.Headers, map[string]string{"Auth-Handler": "testserver", "Auth-Context-Route": "root"}); err != nil {
		t.Errorf("protected route: %v", err)
	}
	// authPolicy.disabled: the auth server is not called.
	got = harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://echo.example.com/public/page"), http.StatusOK)
	if err := harness.WantHeaders(got.Headers, map[string]string{"Auth-Handler": ""}); err != nil {
		t.Errorf("public route: %v", err)
	}
	// The route whose context tells the testserver to deny.
	waitFor(t, 30*time.Second, "GET /deny denied", func() error {
		if code, err := harness.StatusCode(https, "https://echo.example.com/deny"); err != nil || code != http.StatusForbidden {
			return fmt.Errorf("%d, %v; want 403", code, err)
		}
		return nil
	})
	// Plain HTTP to a TLS virtual host: the redirect to the Service's HTTPS port.
	want := "https://echo.example.com/hello"
	if httpsPort != 443 {
		want = fmt.Sprintf("https://echo.example.com:%d/hello", httpsPort)
	}
	waitFor(t, 30*time.Second, "GET http://echo.example.com/hello redirected to "+want, func() error {
		resp, err := httpc.Get("http://echo.example.com/hello")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != want {
			return fmt.Errorf("%d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		return nil
	})
}

// waitAvailable waits for a Deployment's replicas to be available (Pods
// Ready: their probes pass).
func waitAvailable(ctx context.Context, t *testing.T, c *harness.KubeCluster, name string, replicas int32, namespace ...string) {
	t.Helper()
	ns := chartNamespace
	if len(namespace) > 0 {
		ns = namespace[0]
	}
	waitFor(t, 3*time.Minute, fmt.Sprintf("Deployment %s/%s's %d available replicas", ns, name, replicas), func() error {
		d, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != replicas {
			return fmt.Errorf("%d available; pods: %s", d.Status.AvailableReplicas, podStates(ctx, c, ns, d))
		}
		return nil
	})
}

// podStates describes a Deployment's Pods, for failure messages.
func podStates(ctx context.Context, c *harness.KubeCluster, ns string, d *appsv1.Deployment) string {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return err.Error()
	}
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		var cs []string
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			state := "running"
			switch {
			case s.State.Waiting != nil:
				state = "waiting " + s.State.Waiting.Reason + " " + s.State.Waiting.Message
			case s.State.Terminated != nil:
				state = fmt.Sprintf("terminated %d", s.State.Terminated.ExitCode)
			}
			if s.RestartCount > 0 {
				logs, _ := c.Clientset.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: s.Name, Previous: true}).DoRaw(ctx)
				state += " (last run's log: " + tail(string(logs), 5) + ")"
			}
			cs = append(cs, fmt.Sprintf("%s %s ready=%v restarts=%d", s.Name, state, s.Ready, s.RestartCount))
		}
		out = append(out, fmt.Sprintf("%s %s [%s]", p.Name, p.Status.Phase, strings.Join(cs, "; ")))
	}
	return strings.Join(out, ", ")
}

func envoyPods(ctx context.Context, t *testing.T, c *harness.KubeCluster) []corev1.Pod {
	t.Helper()
	pods, err := c.Clientset.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=envoy"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no Envoy pods")
	}
	return out
}

// releaseLeftovers lists the objects of every kind the API serves that
// belong to the release (its instance label), but the CRDs Helm keeps.
func releaseLeftovers(ctx context.Context, c *harness.KubeCluster) error {
	rc := rest.CopyConfig(c.REST)
	rc.WarningHandler = rest.NoWarnings{} // deprecated kinds are listed too
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	lists, err := c.Clientset.Discovery().ServerPreferredResources()
	if err != nil {
		return err
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return err
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") ||
				r.Name == "customresourcedefinitions" || r.Name == "events" {
				continue
			}
			objs, err := dc.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				return fmt.Errorf("list %s: %w", r.Name, err)
			}
			for _, o := range objs.Items {
				left = append(left, describeObj(r.Kind, &o))
			}
		}
	}
	// Helm's release records.
	secrets, err := c.Clientset.CoreV1().Secrets(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + chartRelease})
	if err != nil {
		return err
	}
	for _, s := range secrets.Items {
		left = append(left, "Secret "+s.Name)
	}
	if len(left) > 0 {
		return errors.New("left: " + strings.Join(left, ", "))
	}
	return nil
}

func describeObj(kind string, o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return kind + " " + o.GetName()
	}
	return kind + " " + o.GetNamespace() + "/" + o.GetName()
}

// quickstartObject decodes one object of examples/quickstart.
func quickstartObject[T client.Object](t *testing.T, file string) T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "examples", "quickstart", file))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(string(b))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", file, len(objs), err)
	}
	obj, err := harness.Scheme.New(objs[0].GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, obj); err != nil {
		t.Fatal(err)
	}
	out, ok := obj.(T)
	if !ok {
		t.Fatalf("%s: a %T", file, obj)
	}
	out.SetResourceVersion("")
	return out
}

func quickstartCA(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "examples", "quickstart", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
