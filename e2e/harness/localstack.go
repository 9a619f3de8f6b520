package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// AuthNamespace holds the scenarios' ExtensionServices for the auth servers.
const AuthNamespace = "portcullis-auth"

// LocalStack is a running Portcullis for one scenario, in either provider mode.
type LocalStack struct {
	*Stack
	CA *CA
	// Validity reads the Valid condition (status, reason) of an HTTPProxy,
	// from wherever this mode publishes status.
	Validity func(namespace, name string) (string, string, error)
	// AuthMetrics is the testserver's metrics URL.
	AuthMetrics string
	// Loopback makes a Service (and its endpoints) for a process on
	// 127.0.0.1 in the way this mode allows.
	Loopback func(namespace, name string, port, target int) []client.Object
}

// Components are the processes every mode runs beside the control plane.
type Components struct {
	Echo        *Echo
	AuthH2C     string // 127.0.0.1:port of the plaintext testserver
	AuthTLS     string // 127.0.0.1:port of the TLS testserver
	AuthMetrics string
	CA          *CA
	AuthCAPEM   []byte
}

// StartComponents starts the echo upstream and two authserver testservers
// (plaintext with metrics, and TLS with a certificate from a new CA).
func StartComponents(t testing.TB) *Components {
	c := &Components{Echo: StartEcho(t, "echo"), CA: NewCA(t, "portcullis-e2e")}
	authserver := BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	c.AuthH2C = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	c.AuthMetrics = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	StartProcess(t, "authserver-h2c", authserver, "testserver", "--address", c.AuthH2C, "--metrics-address", c.AuthMetrics)

	authCert := c.CA.Issue(t, "auth.portcullis.test")
	certFile, keyFile := authCert.WriteFiles(t)
	c.AuthTLS = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	StartProcess(t, "authserver-tls", authserver, "testserver", "--address", c.AuthTLS, "--metrics-address", "",
		"--tls-cert-path", certFile, "--tls-key-path", keyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, a := range []string{c.AuthH2C, c.AuthTLS} {
		if err := WaitTCP(ctx, a); err != nil {
			t.Fatalf("auth server at %s: %v", a, err)
		}
	}
	return c
}

// StartEnvoyAndControlPlane runs portcullis serve with the given provider
// arguments, and Envoy bootstrapped from it.
func StartEnvoyAndControlPlane(t testing.TB, providerArgs ...string) (httpAddr, httpsAddr, adminAddr string) {
	httpAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	httpsAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	return httpAddr, httpsAddr, StartEnvoyAndControlPlaneAt(t, httpAddr, httpsAddr, providerArgs...)
}

// StartEnvoyAndControlPlaneAt is StartEnvoyAndControlPlane with Envoy's
// shared HTTP and HTTPS listeners on the given addresses (e.g. the ports
// Gateway listeners on 80 and 443 are served on); it returns the control
// plane's admin address.
func StartEnvoyAndControlPlaneAt(t testing.TB, httpAddr, httpsAddr string, providerArgs ...string) (adminAddr string) {
	cp := StartControlPlane(t, "portcullis", httpAddr, httpsAddr, providerArgs...)
	StartEnvoyOn(t, cp.XDSAddr)
	return cp.AdminAddr
}

// ControlPlane is a running `portcullis serve`.
type ControlPlane struct {
	*Process
	XDSAddr   string // host:port of the xDS server
	AdminAddr string // host:port of the admin endpoint
}

// StartControlPlane runs `portcullis serve` (named name in the logs) for
// Envoy listeners on httpAddr and httpsAddr, with args after the harness's
// own (addresses, a short debounce and poll interval). It does not wait
// for it to serve.
func StartControlPlane(t testing.TB, name, httpAddr, httpsAddr string, args ...string) *ControlPlane {
	portcullis := BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	cp := &ControlPlane{XDSAddr: FreeAddr(t), AdminAddr: FreeAddr(t)}
	all := append([]string{"serve", "--xds-address", cp.XDSAddr, "--admin-address", cp.AdminAddr,
		"--envoy-http-address", httpAddr, "--envoy-https-address", httpsAddr, "--https-redirect-port", httpsAddr[strings.LastIndex(httpsAddr, ":")+1:],
		"--debounce", "50ms", "--poll-interval", "200ms"}, args...)
	cp.Process = StartProcess(t, name, portcullis, all...)
	return cp
}

// Metric is the sum of the samples of one of the control plane's metrics;
// an error when the admin endpoint does not answer.
func (cp *ControlPlane) Metric(name string) (float64, error) {
	return metricValue("http://"+cp.AdminAddr+"/metrics", name)
}

// StartEnvoyOn runs Envoy with the bootstrap `portcullis bootstrap` writes
// for the xDS server at xds (bootstrapArgs are added to its flags), and
// waits until it is LIVE.
func StartEnvoyOn(t testing.TB, xds string, bootstrapArgs ...string) *Envoy {
	portcullis := BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	bootstrap := filepath.Join(t.TempDir(), "envoy.json")
	out, err := RunCommand(portcullis, append([]string{"bootstrap", "--xds-address", xds,
		"--envoy-admin-address", fmt.Sprintf("127.0.0.1:%d", FreePort(t)), "-o", bootstrap}, bootstrapArgs...)...)
	if err != nil {
		t.Fatalf("portcullis bootstrap: %v\n%s", err, out)
	}
	return StartEnvoy(t, bootstrap)
}

// StartOnAPIServer runs portcullis serve with the kubernetes provider on
// api, and Envoy; extraArgs go to portcullis serve.
func StartOnAPIServer(t testing.TB, api *APIServer, extraArgs ...string) *Stack {
	httpAddr, httpsAddr, _ := StartEnvoyAndControlPlane(t, append([]string{"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		// The tests' upstreams are ExternalName Services for localhost (see
		// LoopbackExternalName): opt in, as only tests should.
		"--enable-external-name-services", "--allow-loopback-external-names"}, extraArgs...)...)
	return &Stack{Objects: api, HTTPAddr: httpAddr, HTTPSAddr: httpsAddr}
}

// StartFileStack runs the stack with the file provider, its objects in a
// fresh folder and status read from the admin /status endpoint.
func StartFileStack(t testing.TB) (*LocalStack, *Components) {
	c := StartComponents(t)
	dir := t.TempDir()
	httpAddr, httpsAddr, admin := StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	s := &LocalStack{
		Stack:       &Stack{Objects: Dir(dir), HTTPAddr: httpAddr, HTTPSAddr: httpsAddr},
		CA:          c.CA,
		AuthMetrics: "http://" + c.AuthMetrics + "/metrics",
		Loopback:    LoopbackEndpointSlice,
	}
	s.Validity = func(namespace, name string) (string, string, error) {
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
				return ValidOf(o.Status)
			}
		}
		return "", "", fmt.Errorf("no status for HTTPProxy %s/%s yet", namespace, name)
	}
	return s, c
}

// StartKubernetesStack runs the stack on a real API server; extraArgs go
// to portcullis serve (e.g. --config).
func StartKubernetesStack(t testing.TB, extraArgs ...string) (*LocalStack, *Components) {
	api := StartAPIServer(t, CRDDirs(t)...)
	c := StartComponents(t)
	s := &LocalStack{
		Stack:       StartOnAPIServer(t, api, extraArgs...),
		CA:          c.CA,
		AuthMetrics: "http://" + c.AuthMetrics + "/metrics",
		Loopback:    LoopbackExternalName,
	}
	s.Validity = func(namespace, name string) (string, string, error) {
		var p contourv1.HTTPProxy
		if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			return "", "", err
		}
		return ValidOf(p.Status)
	}
	return s, c
}

// ValidOf is the status and reason of an HTTPProxy's Valid condition.
func ValidOf(st contourv1.HTTPProxyStatus) (string, string, error) {
	c := st.GetCondition(contourv1.ValidConditionType)
	if c == nil {
		return "", "", fmt.Errorf("no Valid condition yet")
	}
	return string(c.Status), c.Reason, nil
}
