//go:build conformance

// Package conformance runs the official Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, the version of our CRDs) against
// Portcullis installed by its Helm chart in the one-machine cluster:
// make conformance (REPORT=FILE writes the suite's ConformanceReport).
// docs/gateway-api.md has the results.
package conformance

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	namespace    = "portcullis-system"
	release      = "portcullis" // the chart's full name is the release's
	gatewayClass = "portcullis"
)

// TestConformance brings the cluster up, installs the chart (the Gateway
// API CRDs, then the GatewayClass) and runs the GATEWAY-HTTP,
// GATEWAY-GRPC, GATEWAY-TLS, GATEWAY-TCP and GATEWAY-UDP profiles with the features
// the GatewayClass claims in its status.supportedFeatures (the suite
// infers them). CONFORMANCE_REPORT names the report file;
// CONFORMANCE_RUN_TEST runs one test only.
func TestConformance(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	// The suite's client knows the Gateway API's kinds (harness.Scheme).
	for _, add := range []func(*runtime.Scheme) error{v1alpha3.Install, v1alpha2.Install, xv1alpha1.Install, gwapiv1.Install} {
		if err := add(harness.Scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := harness.StartCluster(t)
	// The suite polls much, from parallel tests: client-go's default 5
	// requests/s made its waits time out on the client's rate limiter.
	c.REST.QPS, c.REST.Burst = 100, 200
	var err error
	if c.Client, err = client.New(c.REST, client.Options{Scheme: harness.Scheme}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Each Gateway its own Service (gateway.servicePerGateway): the suite's
	// Gateways all listen on port 80 (the UDP ones on 5300), and it
	// reaches each at the ClusterIP in its status from the host, through
	// kube-proxy (UDP too).
	values := []string{
		"--set", "envoy.replicas=1",
		"--set", "envoy.service.type=ClusterIP",
		"--set", "controlPlane.config.gateway.envoyService=" + namespace + "/" + release,
		"--set", "controlPlane.config.gateway.servicePerGateway=true",
		// The experimental channel's CRDs (their own chart, installed
		// first), as Envoy Gateway's report runs: the features of their
		// fields (HTTPRoute retry) are claimed too.
		"--set", "gatewayAPI.installCRDs=false",
		"--set", "controlPlane.config.gateway.experimentalChannel=true",
	}
	start := time.Now()
	if out, err := c.Helm(t, "install", "gateway-api-crds", "charts/gateway-api-crds-experimental", "--namespace", namespace, "--create-namespace"); err != nil {
		t.Fatalf("helm install of the experimental CRDs: %v\n%s", err, out)
	}
	if out, err := c.Helm(t, append([]string{"install", release, "charts/portcullis", "--namespace", namespace, "--create-namespace"}, values...)...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	// The GatewayClass needs the CRDs the install put there.
	if out, err := c.Helm(t, "upgrade", release, "charts/portcullis", "--namespace", namespace, "--reuse-values",
		"--set", "gatewayAPI.gatewayClass.create=true"); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	waitFor(t, 5*time.Minute, "the GatewayClass accepted and Envoy available", func() error {
		var gc gwapiv1.GatewayClass
		if err := c.Client.Get(ctx, client.ObjectKey{Name: gatewayClass}, &gc); err != nil {
			return err
		}
		if !accepted(gc.Status.Conditions) {
			return fmt.Errorf("GatewayClass conditions %+v", gc.Status.Conditions)
		}
		d, err := c.Clientset.AppsV1().Deployments(namespace).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 1 {
			return fmt.Errorf("Envoy: %d available", d.Status.AvailableReplicas)
		}
		return nil
	})
	t.Logf("chart installed in %s", time.Since(start).Round(100*time.Millisecond))

	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClass,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			TimeoutConfig:        config.DefaultTimeoutConfig(),
			Mode:                 "default",
			ConformanceProfiles: []suite.ConformanceProfileName{
				suite.GatewayHTTPConformanceProfileName,
				suite.GatewayGRPCConformanceProfileName,
				suite.GatewayTLSConformanceProfileName,
				suite.GatewayTCPConformanceProfileName,
				suite.GatewayUDPConformanceProfileName,
			},
			Implementation: confv1.Implementation{
				Organization: "portcullis",
				Project:      "portcullis",
				URL:          "https://github.com/portcullis/portcullis",
				Version:      appVersion(t),
				Contact:      []string{"https://github.com/portcullis/portcullis/issues"},
			},
			ReportOutputPath: reportPath(t),
			RunTest:          os.Getenv("CONFORMANCE_RUN_TEST"),
		},
		Client: c.Client,
		// The suite makes clients of its own with these.
		ClientOptions: client.Options{Scheme: harness.Scheme},
		Clientset:     c.Clientset,
		RestConfig:    c.REST,
		ManifestFS:    []fs.FS{&conformance.Manifests},
	}
	conformance.RunConformanceWithOptions(t, opts)
}

func accepted(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == string(gwapiv1.GatewayClassConditionStatusAccepted) && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// reportPath is CONFORMANCE_REPORT made absolute (go test runs in the
// package's folder).
func reportPath(t *testing.T) string {
	p := os.Getenv("CONFORMANCE_REPORT")
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	wd := os.Getenv("CONFORMANCE_WD")
	if wd == "" {
		wd = harness.RepoRoot(t)
	}
	return filepath.Join(wd, p)
}

func appVersion(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "charts", "portcullis", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", chart.AppVersion, err)
	}
	return "v" + strings.TrimPrefix(chart.AppVersion, "v")
}

// waitFor polls f every second until it returns nil, failing the test
// with its last error after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(time.Second)
	}
}
