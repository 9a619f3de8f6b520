package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const extProcNamespace = "portcullis-extproc"

// markingProcessor is an extprocserver configuration that marks the request
// (seen by the upstream) and the response (seen by the client) with its name.
func markingProcessor(name string) string {
	return fmt.Sprintf(`processors:
- headers:
    request:
      set: {x-processed-by: %[1]s}
    response:
      set: {x-response-processed-by: %[1]s}
`, name)
}

// processed is who processed one request: the request header the upstream
// saw and the response header the client saw ("" for nobody).
type processed struct{ request, response string }

func fetchProcessed(c *http.Client, url string) (processed, error) {
	resp, err := c.Get(url)
	if err != nil {
		return processed{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return processed{}, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode, body)
	}
	e, err := harness.DecodeEcho(body)
	if err != nil {
		return processed{}, err
	}
	return processed{request: e.Headers.Get("X-Processed-By"), response: resp.Header.Get("X-Response-Processed-By")}, nil
}

// TestExternalProcessingControlPlane runs external processing through the
// real Envoy, the control plane in kubernetes mode, the real API server and
// three real extprocserver processes: the global processor (configuration
// file), a virtual host's own processor, and a route's override; with the
// virtual host and route switches.
func TestExternalProcessingControlPlane(t *testing.T) {
	procs := map[string]*harness.ExtProcServer{}
	for _, name := range []string{"global", "vhost", "route"} {
		procs[name] = harness.StartExtProcServer(t, markingProcessor(name))
	}
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`globalExtProc:
  processor:
    grpcService:
      extensionRef: {name: global, namespace: %s}
      responseTimeout: 5s
    processingMode:
      requestHeaderMode: SEND
      responseHeaderMode: SEND
      requestBodyMode: NONE
      responseBodyMode: NONE
      requestTrailerMode: SKIP
      responseTrailerMode: SKIP
    mutationRules: {disallowIsError: true}
`, extProcNamespace))
	s, c := harness.StartKubernetesStack(t, "--config", cfg)
	ctx := context.Background()

	serverCert := s.CA.Issue(t, "tls-inherit.example.com", "tls-own.example.com", "tls-off.example.com")
	h2c := "h2c"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: extProcNamespace}},
		serverCert.Secret(extProcNamespace, "server-tls"),
	}
	objs = append(objs, s.Loopback(extProcNamespace, "echo", 80, c.Echo.Port)...)
	for name, p := range procs {
		objs = append(objs, s.Loopback(extProcNamespace, name, 9000, harness.Port(t, p.Addr))...)
		objs = append(objs, &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: extProcNamespace, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}})
	}
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	route := func(prefix string, policy *contourv1.ExtProcPolicy) contourv1.Route {
		return contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: prefix}}, ExtProcPolicy: policy, Services: echo}
	}
	overrideTo := func(ext string, mode *contourv1.ProcessingMode) *contourv1.ExtProcPolicy {
		return &contourv1.ExtProcPolicy{Overrides: &contourv1.ExtProc{
			GRPCService:    &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: ext}, ResponseTimeout: "5s"},
			ProcessingMode: mode,
		}}
	}
	// Requests still go to the processor, responses no longer do.
	requestOnly := &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSkip}
	proxy := func(name, fqdn string, tls bool, ep *contourv1.ExternalProcessor, routes ...contourv1.Route) *contourv1.HTTPProxy {
		p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: extProcNamespace, Name: name},
			Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn, ExtProc: ep}, Routes: routes}}
		if tls {
			p.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "server-tls"}
		}
		return p
	}
	objs = append(objs,
		proxy("plain", "plain.example.com", false, nil,
			route("/", nil),
			route("/off", &contourv1.ExtProcPolicy{Disabled: true}),
			route("/override", overrideTo("route", nil)),
			route("/request-only", &contourv1.ExtProcPolicy{Overrides: &contourv1.ExtProc{ProcessingMode: requestOnly}})),
		proxy("tls-inherit", "tls-inherit.example.com", true, nil, route("/", nil)),
		proxy("tls-own", "tls-own.example.com", true, &contourv1.ExternalProcessor{Processor: &contourv1.ExtProc{
			GRPCService:    &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "vhost"}, ResponseTimeout: "5s"},
			ProcessingMode: &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSend},
		}},
			route("/inherit", &contourv1.ExtProcPolicy{Disabled: false}),
			route("/disabled", &contourv1.ExtProcPolicy{Disabled: true}),
			route("/override", overrideTo("route", requestOnly))),
		proxy("tls-off", "tls-off.example.com", true, &contourv1.ExternalProcessor{Disabled: true}, route("/", nil)),
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	httpc, https := s.HTTP(), s.HTTPS(s.CA.CertPEM)

	for _, tc := range []struct {
		name string
		c    *http.Client
		url  string
		want processed
	}{
		{"global processor on the HTTP listener", httpc, "http://plain.example.com/", processed{"global", "global"}},
		{"route disabled", httpc, "http://plain.example.com/off", processed{}},
		{"route overrides the service", httpc, "http://plain.example.com/override", processed{"route", "route"}},
		{"route overrides only the mode", httpc, "http://plain.example.com/request-only", processed{"global", ""}},
		{"HTTPS host inherits the global processor", https, "https://tls-inherit.example.com/", processed{"global", "global"}},
		{"HTTPS host's own processor", https, "https://tls-own.example.com/inherit", processed{"vhost", "vhost"}},
		{"route disabled under the host's processor", https, "https://tls-own.example.com/disabled", processed{}},
		{"route overrides the host's service and mode", https, "https://tls-own.example.com/override", processed{"route", ""}},
		{"HTTPS host disabled processing", https, "https://tls-off.example.com/", processed{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			harness.Eventually(t, 30*time.Second, func() error {
				got, err := fetchProcessed(tc.c, tc.url)
				if err != nil {
					return err
				}
				if got != tc.want {
					return fmt.Errorf("%s: processed by (request %q, response %q), want (%q, %q)", tc.url, got.request, got.response, tc.want.request, tc.want.response)
				}
				return nil
			})
		})
	}

	t.Run("missing global processor fails closed, warns, and heals", func(t *testing.T) {
		global := &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: extProcNamespace, Name: "global"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "global", Port: 9000}}}}
		if err := s.Objects.Delete(ctx, global); err != nil {
			t.Fatal(err)
		}
		// 500: the processor is required (failOpen is not set).
		harness.EventuallyStatus(t, httpc, "http://plain.example.com/", http.StatusInternalServerError)
		// Routes that do not use the global processor are not affected.
		if got, err := fetchProcessed(https, "https://tls-own.example.com/inherit"); err != nil || got != (processed{"vhost", "vhost"}) {
			t.Errorf("tls-own.example.com/inherit: %+v, %v; want the host's processor, unaffected", got, err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			return proxyWarningIn(s, extProcNamespace, "plain", contourv1.ConditionTypeExtProcError, "GlobalExtProcUnavailable", true)
		})
		if err := s.Objects.Apply(ctx, global); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			got, err := fetchProcessed(httpc, "http://plain.example.com/")
			if err != nil {
				return err
			}
			if got != (processed{"global", "global"}) {
				return fmt.Errorf("processed by %+v, want the global processor again", got)
			}
			return proxyWarningIn(s, extProcNamespace, "plain", contourv1.ConditionTypeExtProcError, "GlobalExtProcUnavailable", false)
		})
	})

	t.Run("a virtual host processor on an HTTP host is an ExtProcError", func(t *testing.T) {
		bad := proxy("http-own", "http-own.example.com", false, &contourv1.ExternalProcessor{Processor: &contourv1.ExtProc{
			GRPCService: &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "vhost"}}}}, route("/", nil))
		if err := s.Objects.Apply(ctx, bad); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			st, reason, err := s.Validity(extProcNamespace, "http-own")
			if err != nil {
				return err
			}
			if st != "False" || reason != "ExtProcNotPermitted" {
				return fmt.Errorf("Valid = %s/%s, want False/ExtProcNotPermitted", st, reason)
			}
			return nil
		})
	})
}
