package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// helmTemplate renders the chart as release t in chartNamespace with
// args (values), failing the test if it does not render.
func helmTemplate(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, stderr, err := runHelmTemplate(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatalf("rendered manifests %v: %v", args, err)
	}
	return objs
}

func runHelmTemplate(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	helm := harness.Tool(t, "helm")
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	all := append([]string{"template", "t", chart, "--namespace", chartNamespace, "--kube-version", "1.37.1"}, args...)
	// stdout only: helm warns on stderr that crds/ is a symbolic link.
	var out, errOut bytes.Buffer
	cmd := exec.Command(helm, all...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// helmOIDCExample is the values file of docs/helm.md's OpenID Connect
// example: the first yaml block of that section.
func helmOIDCExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "docs", "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Example: OpenID Connect\n")
	if !ok {
		t.Fatal("docs/helm.md has no section \"Example: OpenID Connect\"")
	}
	m := regexp.MustCompile("(?s)\n```yaml\n(.*?)```").FindStringSubmatch(section)
	if m == nil || !strings.HasPrefix(m[1], "authserver:") {
		t.Fatal("docs/helm.md's OpenID Connect example: no yaml block of values (authserver: ...)")
	}
	return m[1]
}

// serverContainer is a gRPC server's Deployment and its one container.
func serverContainer(t *testing.T, name string, objs []*unstructured.Unstructured, server string) (*unstructured.Unstructured, map[string]any) {
	t.Helper()
	d := renderedObject(objs, "Deployment", "t-portcullis-"+server)
	if d == nil {
		t.Fatalf("%s: no Deployment t-portcullis-%s", name, server)
	}
	c := podContainers(d)[server]
	if c == nil {
		t.Fatalf("%s: Deployment t-portcullis-%s has no container %s", name, server, server)
	}
	return d, c
}

// podVolumes are a workload's volumes by name, and mounts its
// container's mount paths by volume name.
func podVolumes(d *unstructured.Unstructured, c map[string]any) (volumes map[string]map[string]any, mounts map[string]string) {
	volumes, mounts = map[string]map[string]any{}, map[string]string{}
	vs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range vs {
		m := v.(map[string]any)
		volumes[m["name"].(string)] = m
	}
	ms, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, v := range ms {
		m := v.(map[string]any)
		if ro, _ := m["readOnly"].(bool); !ro {
			continue // not counted: every mount of the chart is read-only
		}
		mounts[m["name"].(string)] = m["mountPath"].(string)
	}
	return volumes, mounts
}

// serverTLS is what checkServerTLS found: the server's Secret data and
// the names Envoy checks.
type serverTLS struct {
	caPEM, certPEM, keyPEM []byte
	subjectName            string
}

// checkServerTLS: with <server>.tls.enabled the ExtensionService is h2
// with validation of the Service's name against the Secret's ca.crt, the
// server gets the certificate flags and the Secret mounted, probes over
// plain HTTP (the kubelet's gRPC probes cannot speak TLS), and the
// generated Secret's certificate is valid for that name from that CA.
func checkServerTLS(t *testing.T, name string, objs []*unstructured.Unstructured, server string) *serverTLS {
	t.Helper()
	full := "t-portcullis-" + server
	secretName, subject := full+"-tls", full+"."+chartNamespace+".svc"
	es := renderedObject(objs, "ExtensionService", full)
	if es == nil {
		t.Fatalf("%s: no ExtensionService %s", name, full)
	}
	spec, _, _ := unstructured.NestedMap(es.Object, "spec")
	want := map[string]any{"caSecret": secretName, "subjectName": subject}
	if spec["protocol"] != "h2" || !reflect.DeepEqual(spec["validation"], want) {
		t.Errorf("%s: ExtensionService %s is protocol %v validation %v; want h2 with %v", name, full, spec["protocol"], spec["validation"], want)
	}

	d, c := serverContainer(t, name, objs, server)
	if missing := missingArgs(c, "--tls-cert-path=/etc/"+server+"-tls/tls.crt", "--tls-key-path=/etc/"+server+"-tls/tls.key"); len(missing) > 0 {
		t.Errorf("%s: %s lacks the TLS flags %v (args %v)", name, server, missing, argsOf(c))
	}
	volumes, mounts := podVolumes(d, c)
	if got, _, _ := unstructured.NestedString(volumes["tls"], "secret", "secretName"); got != secretName || mounts["tls"] != "/etc/"+server+"-tls" {
		t.Errorf("%s: %s's tls volume is Secret %q mounted at %q; want %s at /etc/%s-tls", name, server, got, mounts["tls"], secretName, server)
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		p, _, _ := unstructured.NestedMap(c, probe)
		if hg, _ := p["httpGet"].(map[string]any); hg == nil || hg["path"] != "/healthz" || hg["port"] != "metrics" || p["grpc"] != nil {
			t.Errorf("%s: %s's %s is %v; want httpGet /healthz on the metrics port", name, server, probe, p)
		}
	}
	if sum, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "checksum/tls"); sum == "" {
		t.Errorf("%s: %s's pods have no checksum/tls annotation: a new certificate would not restart them", name, server)
	}
	if svc := renderedObject(objs, "Service", full); svc != nil {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range ports {
			if ap, _ := p.(map[string]any)["appProtocol"].(string); ap == "kubernetes.io/h2c" {
				t.Errorf("%s: Service %s says its port is h2c (plaintext) while the server serves TLS", name, full)
			}
		}
	}

	secret := renderedObject(objs, "Secret", secretName)
	if secret == nil {
		t.Fatalf("%s: no Secret %s (%s.tls.generate)", name, secretName, server)
	}
	data := func(key string) []byte {
		b64, _, _ := unstructured.NestedString(secret.Object, "data", key)
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: Secret %s's %s: %v", name, secretName, key, err)
		}
		return b
	}
	out := &serverTLS{caPEM: data("ca.crt"), certPEM: data("tls.crt"), keyPEM: data("tls.key"), subjectName: subject}
	pair, err := tls.X509KeyPair(out.certPEM, out.keyPEM)
	if err != nil {
		t.Fatalf("%s: Secret %s's key pair: %v", name, secretName, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(out.caPEM) {
		t.Fatalf("%s: Secret %s's ca.crt is not PEM", name, secretName)
	}
	for _, dns := range []string{subject, full + "." + chartNamespace, full} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: dns, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %s's certificate for %s: %v", name, server, dns, err)
		}
	}
	if block, _ := pem.Decode(out.caPEM); block != nil {
		if ca, err := x509.ParseCertificate(block.Bytes); err != nil || !ca.IsCA {
			t.Errorf("%s: Secret %s's ca.crt is not a CA (%v)", name, secretName, err)
		}
	}
	return out
}

// checkServerPlaintext: without <server>.tls the ExtensionService is h2c
// without validation, the server plaintext with gRPC probes, and no TLS
// Secret is made.
func checkServerPlaintext(t *testing.T, name string, objs []*unstructured.Unstructured, server string) {
	t.Helper()
	full := "t-portcullis-" + server
	es := renderedObject(objs, "ExtensionService", full)
	if es == nil {
		t.Fatalf("%s: no ExtensionService %s", name, full)
	}
	spec, _, _ := unstructured.NestedMap(es.Object, "spec")
	if spec["protocol"] != "h2c" || spec["validation"] != nil {
		t.Errorf("%s: ExtensionService %s is protocol %v validation %v; want h2c, none", name, full, spec["protocol"], spec["validation"])
	}
	_, c := serverContainer(t, name, objs, server)
	for _, a := range argsOf(c) {
		if strings.HasPrefix(a, "--tls-") {
			t.Errorf("%s: %s has %s without tls.enabled", name, server, a)
		}
	}
	if p, _, _ := unstructured.NestedMap(c, "readinessProbe", "grpc"); p == nil {
		t.Errorf("%s: %s's readiness probe is not gRPC", name, server)
	}
	if renderedObject(objs, "Secret", full+"-tls") != nil {
		t.Errorf("%s: Secret %s-tls made without tls.enabled", name, full)
	}
}

// TestHelmChartServerTLS renders the auth and processing servers with
// and without tls.enabled, and with Secrets of the user's.
func TestHelmChartServerTLS(t *testing.T) {
	both := []string{"--set", "authserver.enabled=true", "--set", "authserver.backend=testserver", "--set", "extprocserver.enabled=true"}
	plain := helmTemplate(t, both...)
	for _, server := range []string{"authserver", "extprocserver"} {
		checkServerPlaintext(t, "tls off", plain, server)
	}

	on := helmTemplate(t, append(both, "--set", "authserver.tls.enabled=true", "--set", "extprocserver.tls.enabled=true")...)
	a := checkServerTLS(t, "tls on", on, "authserver")
	e := checkServerTLS(t, "tls on", on, "extprocserver")
	if bytes.Equal(a.caPEM, e.caPEM) || bytes.Equal(a.keyPEM, e.keyPEM) {
		t.Error("the two servers share a CA or a key")
	}
	// One server's TLS leaves the other as it is.
	mixed := helmTemplate(t, append(both, "--set", "extprocserver.tls.enabled=true")...)
	checkServerPlaintext(t, "extprocserver tls only", mixed, "authserver")
	checkServerTLS(t, "extprocserver tls only", mixed, "extprocserver")
	// The configuration file and the TLS Secret are separate mounts.
	d, c := serverContainer(t, "tls on", on, "extprocserver")
	if _, mounts := podVolumes(d, c); mounts["config"] != "/etc/extprocserver" || mounts["tls"] != "/etc/extprocserver-tls" {
		t.Errorf("extprocserver mounts %v; want config at /etc/extprocserver and tls at /etc/extprocserver-tls", mounts)
	}

	// Secrets of the user's: not made, named by the server and the
	// ExtensionService.
	own := helmTemplate(t, append(both, "--set", "authserver.tls.enabled=true", "--set", "authserver.tls.secret=auth-tls",
		"--set", "authserver.tls.generate=false", "--set", "authserver.tls.caSecret=corp-ca")...)
	for _, o := range own {
		if o.GetKind() == "Secret" && strings.Contains(o.GetName(), "authserver") {
			t.Errorf("authserver.tls.generate=false renders Secret %s", o.GetName())
		}
	}
	es := renderedObject(own, "ExtensionService", "t-portcullis-authserver")
	if v, _, _ := unstructured.NestedMap(es.Object, "spec", "validation"); v["caSecret"] != "corp-ca" || v["subjectName"] != "t-portcullis-authserver."+chartNamespace+".svc" {
		t.Errorf("authserver.tls.caSecret=corp-ca: validation %v", v)
	}
	d, c = serverContainer(t, "own secret", own, "authserver")
	if volumes, _ := podVolumes(d, c); volumes["tls"] == nil || volumes["tls"]["secret"].(map[string]any)["secretName"] != "auth-tls" {
		t.Errorf("authserver.tls.secret=auth-tls: volumes %v", volumes)
	}
}

// TestHelmChartOIDC renders docs/helm.md's OpenID Connect example: the
// configuration file is the example's settings plus the files of the
// Secret it names, mounted where they say, the ExtensionService is TLS;
// then runs the auth server as the pod would (its arguments, the rendered
// file, the Secret's files) and checks it serves gRPC over TLS only, for
// the name Envoy verifies. Values that would put secrets in the values,
// or leave the cookie key out, are refused.
func TestHelmChartOIDC(t *testing.T) {
	example := helmOIDCExample(t)
	valuesFile := filepath.Join(t.TempDir(), "oidc-values.yaml")
	if err := os.WriteFile(valuesFile, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Authserver struct {
			OIDC       map[string]any `json:"oidc"`
			OIDCSecret struct{ Name string }
		}
	}
	if err := yaml.Unmarshal([]byte(example), &values); err != nil {
		t.Fatal(err)
	}
	objs := helmTemplate(t, "-f", valuesFile)

	cm := renderedObject(objs, "ConfigMap", "t-portcullis-authserver")
	if cm == nil {
		t.Fatal("no ConfigMap t-portcullis-authserver")
	}
	file, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	var config map[string]map[string]any
	if err := yaml.Unmarshal([]byte(file), &config); err != nil {
		t.Fatalf("config.yaml: %v\n%s", err, file)
	}
	want := values.Authserver.OIDC
	want["clientSecretFile"] = "/etc/authserver-oidc/client-secret"
	want["cookie"] = map[string]any{"keyFile": "/etc/authserver-oidc/cookie-key"}
	if !reflect.DeepEqual(config["oidc"], want) || len(config) != 1 {
		got, _ := yaml.Marshal(config)
		wantYAML, _ := yaml.Marshal(map[string]any{"oidc": want})
		t.Errorf("config.yaml\n%s\nwant\n%s", got, wantYAML)
	}

	d, c := serverContainer(t, "oidc example", objs, "authserver")
	wantArgs := []string{"--address=0.0.0.0:9443", "--metrics-address=0.0.0.0:9090", "oidc", "--config=/etc/authserver/config.yaml",
		"--tls-cert-path=/etc/authserver-tls/tls.crt", "--tls-key-path=/etc/authserver-tls/tls.key"}
	if got := argsOf(c); !slices.Equal(got, wantArgs) {
		t.Errorf("authserver args %v, want %v", got, wantArgs)
	}
	volumes, mounts := podVolumes(d, c)
	if got, _, _ := unstructured.NestedString(volumes["oidc-secret"], "secret", "secretName"); got != values.Authserver.OIDCSecret.Name || mounts["oidc-secret"] != "/etc/authserver-oidc" {
		t.Errorf("the oidc Secret's volume is %q mounted at %q; want %s at /etc/authserver-oidc", got, mounts["oidc-secret"], values.Authserver.OIDCSecret.Name)
	}
	if renderedObject(objs, "Secret", values.Authserver.OIDCSecret.Name) != nil {
		t.Errorf("the chart renders Secret %s, which is the user's", values.Authserver.OIDCSecret.Name)
	}
	if env, _, _ := unstructured.NestedSlice(c, "env"); len(env) != 0 {
		t.Errorf("authserver env %v; want none", env)
	}
	es := renderedObject(objs, "ExtensionService", "t-portcullis-authserver")
	if got, _, _ := unstructured.NestedString(es.Object, "spec", "timeoutPolicy", "response"); got != "5s" {
		t.Errorf("ExtensionService response timeout %q, want the example's 5s", got)
	}
	certs := checkServerTLS(t, "oidc example", objs, "authserver")
	if t.Failed() {
		t.FailNow()
	}

	t.Run("runs", func(t *testing.T) {
		runRenderedAuthserver(t, c, file, certs)
	})

	t.Run("refusals", func(t *testing.T) {
		base := []string{"--set", "authserver.enabled=true", "--set", "authserver.backend=oidc"}
		idp := append(slices.Clone(base), "--set", "authserver.oidc.issuer=https://id.example.com", "--set", "authserver.oidc.clientID=portcullis")
		withSecret := append(slices.Clone(idp), "--set", "authserver.oidcSecret.name=oidc")
		for _, tc := range []struct {
			args    []string
			wantErr string
		}{
			{idp, "the cookie key comes from a Secret: set authserver.oidcSecret.name"},
			{append(slices.Clone(withSecret), "--set", "authserver.oidc.clientSecret=hunter2"), "authserver.oidc.clientSecret: secrets are never written in the values"},
			{append(slices.Clone(withSecret), "--set", "authserver.oidc.cookie.key=abc"), "authserver.oidc.cookie.key: secrets are never written in the values"},
			{append(slices.Clone(withSecret), "--set", "authserver.oidc.cookie.previousKey=abc"), "authserver.oidc.cookie.previousKey: secrets are never written"},
			{append(slices.Clone(base), "--set", "authserver.oidc.clientID=portcullis", "--set", "authserver.oidcSecret.name=oidc"), "issuer and clientID are required"},
			{append(slices.Clone(idp), "--set", "authserver.oidcSecret.name=oidc", "--set", "authserver.oidcSecret.keys.cookieKey="), "the cookie key comes from a Secret"},
		} {
			_, stderr, err := runHelmTemplate(t, tc.args...)
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("%v: %v, want an error %q\n%s", tc.args, err, tc.wantErr, stderr)
			}
		}
	})

	t.Run("secret keys and fields of the user's", func(t *testing.T) {
		base := []string{"--set", "authserver.enabled=true", "--set", "authserver.backend=oidc",
			"--set", "authserver.oidc.issuer=https://id.example.com", "--set", "authserver.oidc.clientID=portcullis"}
		oidcConfig := func(args ...string) (map[string]any, []*unstructured.Unstructured) {
			objs := helmTemplate(t, append(slices.Clone(base), args...)...)
			file, _, _ := unstructured.NestedString(renderedObject(objs, "ConfigMap", "t-portcullis-authserver").Object, "data", "config.yaml")
			var config map[string]map[string]any
			if err := yaml.Unmarshal([]byte(file), &config); err != nil {
				t.Fatal(err)
			}
			return config["oidc"], objs
		}
		// Every key of the Secret: a rotation's previous key, the
		// provider's CA; no client secret (a public client).
		got, _ := oidcConfig("--set", "authserver.oidcSecret.name=oidc", "--set", "authserver.oidcSecret.keys.clientSecret=",
			"--set", "authserver.oidcSecret.keys.previousCookieKey=old-key", "--set", "authserver.oidcSecret.keys.providerCA=ca.pem")
		want := map[string]any{"issuer": "https://id.example.com", "clientID": "portcullis", "providerCAFile": "/etc/authserver-oidc/ca.pem",
			"cookie": map[string]any{"keyFile": "/etc/authserver-oidc/cookie-key", "previousKeyFile": "/etc/authserver-oidc/old-key"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("all keys: oidc config %v, want %v", got, want)
		}
		// Fields set in the values win; the cookie's other settings stay.
		got, _ = oidcConfig("--set", "authserver.oidcSecret.name=oidc", "--set", "authserver.oidc.clientSecretEnv=CLIENT_SECRET",
			"--set", "authserver.oidc.cookie.keyFile=/mine/key", "--set", "authserver.oidc.cookie.sessionLifetime=1h")
		want = map[string]any{"issuer": "https://id.example.com", "clientID": "portcullis", "clientSecretEnv": "CLIENT_SECRET",
			"cookie": map[string]any{"keyFile": "/mine/key", "sessionLifetime": "1h"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fields of the user's: oidc config %v, want %v", got, want)
		}
		// Secrets from the environment, no oidcSecret: no volume.
		got, objs := oidcConfig("--set", "authserver.oidc.cookie.keyEnv=COOKIE_KEY",
			"--set", "authserver.env[0].name=COOKIE_KEY", "--set", "authserver.env[0].valueFrom.secretKeyRef.name=oidc",
			"--set", "authserver.env[0].valueFrom.secretKeyRef.key=cookie-key")
		if ck, _ := got["cookie"].(map[string]any); ck["keyEnv"] != "COOKIE_KEY" || got["clientSecretFile"] != nil {
			t.Errorf("from env: oidc config %v", got)
		}
		d, c := serverContainer(t, "from env", objs, "authserver")
		if volumes, _ := podVolumes(d, c); volumes["oidc-secret"] != nil {
			t.Errorf("from env: an oidc-secret volume without oidcSecret.name: %v", volumes)
		}
	})
}

// runRenderedAuthserver runs the authserver binary as the rendered
// container would: its arguments, with the pod's paths mapped to files
// of the rendered configuration, the oidc Secret (made up here) and the
// TLS Secret, and addresses on loopback. It must start (the configuration
// is accepted) and serve gRPC over TLS for the ExtensionService's
// subjectName from its CA, and not in plaintext.
func runRenderedAuthserver(t *testing.T, c map[string]any, configFile string, certs *serverTLS) {
	dir := t.TempDir()
	files := map[string][]byte{
		"authserver/config.yaml":        []byte(configFile),
		"authserver-oidc/client-secret": []byte("s3cret\n"),
		"authserver-oidc/cookie-key":    []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) + "\n"),
		"authserver-tls/tls.crt":        certs.certPEM,
		"authserver-tls/tls.key":        certs.keyPEM,
		"authserver-tls/ca.crt":         certs.caPEM,
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if name == "authserver/config.yaml" {
			data = []byte(strings.ReplaceAll(string(data), "/etc/", dir+"/"))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	grpcAddr, metricsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	var args []string
	for _, a := range argsOf(c) {
		switch {
		case strings.HasPrefix(a, "--address="):
			a = "--address=" + grpcAddr
		case strings.HasPrefix(a, "--metrics-address="):
			a = "--metrics-address=" + metricsAddr
		default:
			a = strings.ReplaceAll(a, "/etc/", dir+"/")
		}
		args = append(args, a)
	}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	p := harness.StartProcess(t, "authserver-rendered", authserver, args...)
	harness.Eventually(t, 30*time.Second, func() error {
		select {
		case <-p.Done():
			return fmt.Errorf("the auth server exited: %v\n%s", p.ExitErr(), p.Logs())
		default:
		}
		code, err := harness.StatusCode(http.DefaultClient, "http://"+metricsAddr+"/healthz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/healthz: %d", code)
		}
		return err
	})

	health := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.Status != healthpb.HealthCheckResponse_SERVING {
			err = fmt.Errorf("health %v", resp.Status)
		}
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certs.caPEM)
	// As Envoy: the Secret's ca.crt, the ExtensionService's subjectName.
	if err := health(credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: certs.subjectName, MinVersion: tls.VersionTLS12})); err != nil {
		t.Errorf("gRPC over TLS, verified for %s: %v", certs.subjectName, err)
	}
	if err := health(insecure.NewCredentials()); err == nil {
		t.Error("the rendered auth server answers plaintext gRPC: TLS is off")
	}
}

// TestHelmChartServerTLSThroughEnvoy: the chart's TLS objects, as
// rendered, work together through the real control plane and Envoy. The
// rendered ExtensionService and TLS Secret are served by portcullis serve
// (file provider), the auth server (testserver) runs with the rendered
// container's arguments and the Secret's files, and a request to an
// HTTPProxy protected by that ExtensionService (failing closed) is
// allowed by it. Were TLS off on either side (the ExtensionService h2c or
// the server without its certificate), every check would fail and the
// request be refused: the last step proves it, with the ExtensionService
// turned to h2c.
func TestHelmChartServerTLSThroughEnvoy(t *testing.T) {
	objs := helmTemplate(t, "--set", "authserver.enabled=true", "--set", "authserver.backend=testserver", "--set", "authserver.tls.enabled=true")
	certs := checkServerTLS(t, "testserver tls", objs, "authserver")
	_, c := serverContainer(t, "testserver tls", objs, "authserver")
	cm := renderedObject(objs, "ConfigMap", "t-portcullis-authserver")
	configFile, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	es := renderedObject(objs, "ExtensionService", "t-portcullis-authserver")
	secret := renderedObject(objs, "Secret", "t-portcullis-authserver-tls")

	// The server as the pod runs it.
	dir := t.TempDir()
	for name, data := range map[string][]byte{"authserver/config.yaml": []byte(configFile),
		"authserver-tls/tls.crt": certs.certPEM, "authserver-tls/tls.key": certs.keyPEM, "authserver-tls/ca.crt": certs.caPEM} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	grpcAddr := harness.FreeAddr(t)
	var args []string
	for _, a := range argsOf(c) {
		switch {
		case strings.HasPrefix(a, "--address="):
			a = "--address=" + grpcAddr
		case strings.HasPrefix(a, "--metrics-address="):
			a = "--metrics-address="
		default:
			a = strings.ReplaceAll(a, "/etc/", dir+"/")
		}
		args = append(args, a)
	}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	harness.StartProcess(t, "authserver-chart-tls", authserver, args...)

	s, comp := harness.StartFileStack(t)
	ctx := context.Background()
	serverCert := s.CA.Issue(t, "chart-tls.example.com")
	proxy := &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "chart-tls"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: "chart-tls.example.com",
				TLS:  &contourv1.TLS{SecretName: "server-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: chartNamespace, Name: es.GetName()},
				},
			},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
	objects := []client.Object{serverCert.Secret("default", "server-tls"), proxy, es, secret}
	objects = append(objects, s.Loopback("default", "echo", 80, comp.Echo.Port)...)
	objects = append(objects, s.Loopback(chartNamespace, "t-portcullis-authserver", 9443, harness.Port(t, grpcAddr))...)
	if err := s.Objects.Apply(ctx, objects...); err != nil {
		t.Fatal(err)
	}
	https := s.HTTPS(s.CA.CertPEM)
	// Auth-Handler is set by the testserver: the check reached it.
	echo := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://chart-tls.example.com/page"), http.StatusOK)
	if got := echo.Headers.Get("Auth-Handler"); got != "testserver" {
		t.Errorf("upstream saw Auth-Handler %q, want testserver (the check went through the chart's auth server)", got)
	}

	// The same with the ExtensionService in plaintext: the TLS server
	// cannot be reached, and the route fails closed.
	h2c := es.DeepCopy()
	unstructured.RemoveNestedField(h2c.Object, "spec", "validation")
	if err := unstructured.SetNestedField(h2c.Object, "h2c", "spec", "protocol"); err != nil {
		t.Fatal(err)
	}
	if err := s.Objects.Apply(ctx, h2c); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		code, err := harness.StatusCode(https, "https://chart-tls.example.com/page")
		if err != nil {
			return err
		}
		if code == http.StatusOK {
			return fmt.Errorf("status %d with the ExtensionService in h2c; want a refusal", code)
		}
		return nil
	})
}

// TestHelmChartServerTLSInstall installs and upgrades a release with
// helm against a real API server, to check what `helm template` (no
// cluster to look up) cannot: the TLS Secret the chart made is kept by
// upgrades, with its pods' checksum; a TLS Secret of the user's is left
// alone and named; a new certificate (the Secret deleted, then an
// upgrade) or a changed oidc Secret changes the pods' checksums, so
// the servers, which read them at start, restart.
func TestHelmChartServerTLSInstall(t *testing.T) {
	helm := harness.Tool(t, "helm")
	chart := installableChart(t)
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "tls"
	run := func(args ...string) string {
		t.Helper()
		out, err := harness.RunCommand(helm, append(args, "--namespace", ns, "--kubeconfig", api.KubeconfigPath)...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	userTLS := harness.NewCA(t, "mine").Issue(t, "a-portcullis-extprocserver.tls.svc").Secret(ns, "a-portcullis-extprocserver-tls")
	userTLS.Data["ca.crt"] = []byte("-----BEGIN CERTIFICATE-----\nmine\n-----END CERTIFICATE-----\n")
	oidcSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oidc"},
		Data: map[string][]byte{"client-secret": []byte("s3cret"), "cookie-key": bytes.Repeat([]byte{'a'}, 64)}}
	if err := api.Apply(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, userTLS, oidcSecret); err != nil {
		t.Fatal(err)
	}
	secretData := func(name string) map[string][]byte {
		t.Helper()
		var s corev1.Secret
		if err := api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
		return s.Data
	}
	annotations := func(name string) map[string]string {
		t.Helper()
		var d appsv1.Deployment
		if err := api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			t.Fatalf("Deployment %s: %v", name, err)
		}
		return d.Spec.Template.Annotations
	}

	run("install", "a", chart, "--set", "authserver.enabled=true", "--set", "authserver.backend=oidc",
		"--set", "authserver.oidc.issuer=https://id.example.com", "--set", "authserver.oidc.clientID=portcullis",
		"--set", "authserver.oidcSecret.name=oidc", "--set", "authserver.tls.enabled=true",
		"--set", "extprocserver.enabled=true", "--set", "extprocserver.tls.enabled=true")
	made := secretData("a-portcullis-authserver-tls")
	if len(made["tls.crt"]) == 0 || len(made["ca.crt"]) == 0 || len(made["tls.key"]) == 0 {
		t.Fatalf("the chart's TLS Secret holds %d keys", len(made))
	}
	auth := annotations("a-portcullis-authserver")
	if auth["checksum/tls"] == "" || auth["checksum/oidc-secret"] == "" {
		t.Errorf("the auth server's pods have annotations %v; want checksum/tls and checksum/oidc-secret", auth)
	}
	// The user's Secret: left as it is, named by the ExtensionService and
	// the server, its checksum on the pods.
	if got := secretData(userTLS.Name); !reflect.DeepEqual(got, userTLS.Data) {
		t.Error("the release changed the user's TLS Secret")
	}
	if objs, err := decodeManifests(run("get", "manifest", "a")); err != nil || renderedObject(objs, "Secret", userTLS.Name) != nil || renderedObject(objs, "Secret", "a-portcullis-authserver-tls") == nil {
		t.Errorf("release a's manifest (%v): want the auth server's TLS Secret and not the user's %s", err, userTLS.Name)
	}
	if annotations("a-portcullis-extprocserver")["checksum/tls"] == "" {
		t.Error("the processing server's pods have no checksum of the user's TLS Secret")
	}

	// An upgrade keeps the certificate and the pods.
	run("upgrade", "a", chart, "--reuse-values", "--set", "authserver.replicas=3")
	if got := secretData("a-portcullis-authserver-tls"); !reflect.DeepEqual(got, made) {
		t.Error("helm upgrade made a new auth server certificate")
	}
	if got := annotations("a-portcullis-authserver"); got["checksum/tls"] != auth["checksum/tls"] || got["checksum/oidc-secret"] != auth["checksum/oidc-secret"] {
		t.Errorf("helm upgrade changed the checksums: %v, before %v", got, auth)
	}

	// A new cookie key in the oidc Secret, and a new certificate (the
	// Secret deleted): the upgrade rolls the pods.
	oidcSecret.Data["cookie-key"] = bytes.Repeat([]byte{'b'}, 64)
	if err := api.Apply(ctx, oidcSecret); err != nil {
		t.Fatal(err)
	}
	if err := api.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-portcullis-authserver-tls"}}); err != nil {
		t.Fatal(err)
	}
	run("upgrade", "a", chart, "--reuse-values")
	if got := secretData("a-portcullis-authserver-tls"); bytes.Equal(got["tls.crt"], made["tls.crt"]) || len(got["tls.crt"]) == 0 {
		t.Error("no new certificate after the Secret was deleted")
	}
	if got := annotations("a-portcullis-authserver"); got["checksum/tls"] == auth["checksum/tls"] || got["checksum/oidc-secret"] == auth["checksum/oidc-secret"] {
		t.Errorf("a new certificate and cookie key left the checksums as they were: %v", got)
	}
	if got := secretData(userTLS.Name); !reflect.DeepEqual(got, userTLS.Data) {
		t.Error("an upgrade changed the user's TLS Secret")
	}
}
