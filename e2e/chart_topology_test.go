package e2e

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderedObject looks up one rendered object.
func renderedObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// podContainers are a workload's containers by name (init containers
// under "init:<name>").
func podContainers(o *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
		for _, c := range cs {
			m := c.(map[string]any)
			name := m["name"].(string)
			if field == "initContainers" {
				name = "init:" + name
			}
			out[name] = m
		}
	}
	return out
}

func containerNames(o *unstructured.Unstructured) []string {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	var out []string
	for _, c := range cs {
		out = append(out, c.(map[string]any)["name"].(string))
	}
	return out
}

func argsOf(c map[string]any) []string {
	var out []string
	for _, a := range c["args"].([]any) {
		out = append(out, fmt.Sprint(a))
	}
	return out
}

// missingArgs are the args of want that c lacks.
func missingArgs(c map[string]any, want ...string) []string {
	var out []string
	args := argsOf(c)
	for _, w := range want {
		if !slices.Contains(args, w) {
			out = append(out, w)
		}
	}
	return out
}

// checkSeparate: a control-plane Deployment serving xDS over mTLS with
// leader election, its Service and PDB; Envoy apart (Deployment or
// DaemonSet) bootstrapped to that Service over mTLS with its client
// Secret, ready from Envoy's /ready, drained on termination.
func checkSeparate(t *testing.T, name string, objs []*unstructured.Unstructured) {
	t.Helper()
	cp := renderedObject(objs, "Deployment", "t-portcullis-controlplane")
	if cp == nil {
		t.Errorf("%s: no control-plane Deployment", name)
		return
	}
	if r, _, _ := nestedNumber(cp.Object, "spec", "replicas"); r < 2 {
		t.Errorf("%s: control plane replicas %d, want 2 or more", name, r)
	}
	c := podContainers(cp)["portcullis"]
	if m := missingArgs(c, "--xds-address=0.0.0.0:8001", "--xds-tls-cert=/xds-certs/tls.crt", "--xds-tls-key=/xds-certs/tls.key",
		"--xds-tls-client-ca=/xds-certs/ca.crt", "--leader-elect", "--leader-elect-namespace=$(POD_NAMESPACE)", "--leader-elect-identity=$(POD_NAME)",
		"--leader-elect-lease-name=t-portcullis"); len(m) > 0 {
		t.Errorf("%s: the control plane lacks %v (args %v)", name, m, argsOf(c))
	}
	if !strings.Contains(fmt.Sprint(cp.Object["spec"]), "secretName:t-portcullis-xds-server") {
		t.Errorf("%s: the control plane does not mount the Secret t-portcullis-xds-server", name)
	}
	if name == "cert-manager" {
		if renderedObject(objs, "Secret", "t-portcullis-xds-server") != nil {
			t.Errorf("%s: the xDS Secrets are cert-manager's, yet the chart makes one", name)
		}
	} else {
		checkGeneratedXDSSecrets(t, name, objs)
	}
	if renderedObject(objs, "Service", "t-portcullis-xds") == nil || renderedObject(objs, "PodDisruptionBudget", "t-portcullis-controlplane") == nil ||
		renderedObject(objs, "Role", "t-portcullis-leader-election") == nil {
		t.Errorf("%s: want the xDS Service, the control plane's PDB and the leader election Role", name)
	}

	var envoy *unstructured.Unstructured
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		if o := renderedObject(objs, kind, "t-portcullis"); o != nil {
			envoy = o
		}
	}
	if envoy == nil {
		t.Errorf("%s: no Envoy workload", name)
		return
	}
	if name == "daemonset" && envoy.GetKind() != "DaemonSet" {
		t.Errorf("%s: Envoy is a %s, want a DaemonSet", name, envoy.GetKind())
	}
	if got := containerNames(envoy); !slices.Equal(got, []string{"envoy", "drainer"}) {
		t.Errorf("%s: Envoy's pod runs %v, want envoy and its drainer only", name, got)
	}
	cs := podContainers(envoy)
	if m := missingArgs(cs["init:bootstrap"], "--xds-address=t-portcullis-xds."+chartNamespace+".svc:8001", "--xds-tls-cert=/xds-certs/tls.crt",
		"--xds-tls-key=/xds-certs/tls.key", "--xds-tls-ca=/xds-certs/ca.crt", "--ready-address=0.0.0.0:8003"); len(m) > 0 {
		t.Errorf("%s: Envoy's bootstrap lacks %v", name, m)
	}
	if !strings.Contains(fmt.Sprint(envoy.Object["spec"]), "secretName:t-portcullis-xds-client") {
		t.Errorf("%s: Envoy does not mount the Secret t-portcullis-xds-client", name)
	}
	checkEnvoyContainers(t, name, envoy)
	if renderedObject(objs, "PodDisruptionBudget", "t-portcullis") == nil {
		t.Errorf("%s: no PDB for Envoy", name)
	}
}

// checkEnvoyContainers: readiness from Envoy's /ready; its preStop keeps
// it running while the drainer drains it, for the same time.
func checkEnvoyContainers(t *testing.T, name string, workload *unstructured.Unstructured) {
	t.Helper()
	cs := podContainers(workload)
	envoy, drainer := cs["envoy"], cs["drainer"]
	if path, _, _ := unstructured.NestedString(envoy, "readinessProbe", "httpGet", "path"); path != "/ready" {
		t.Errorf("%s: Envoy's readiness probe %v, want GET /ready", name, envoy["readinessProbe"])
	}
	sleep, _, _ := nestedNumber(envoy, "lifecycle", "preStop", "sleep", "seconds")
	if args := argsOf(envoy); sleep != 30 || slices.Index(args, "--drain-time-s") < 0 || slices.Index(args, "--drain-time-s")+1 >= len(args) ||
		args[slices.Index(args, "--drain-time-s")+1] != "30" {
		t.Errorf("%s: Envoy's preStop sleeps %d s (args %v), want 30 and --drain-time-s 30 (Envoy takes no --flag=value)", name, sleep, args)
	}
	if drainer == nil {
		t.Errorf("%s: no drainer", name)
		return
	}
	if m := missingArgs(drainer, "envoy-drain", "--on-signal", "--envoy-admin-address=127.0.0.1:9901", "--drain-time=30s"); len(m) > 0 {
		t.Errorf("%s: the drainer lacks %v", name, m)
	}
	if grace, _, _ := nestedNumber(workload.Object, "spec", "template", "spec", "terminationGracePeriodSeconds"); grace <= sleep {
		t.Errorf("%s: terminationGracePeriodSeconds %d is not more than the drain", name, grace)
	}
}

// checkColocated: one Deployment whose pods run the control plane (xDS on
// loopback, no TLS; leader election as there are two) beside Envoy.
func checkColocated(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if renderedObject(objs, "Deployment", "t-portcullis-controlplane") != nil || renderedObject(objs, "Service", "t-portcullis-xds") != nil {
		t.Error("colocated: renders the separate control plane")
	}
	d := renderedObject(objs, "Deployment", "t-portcullis")
	if d == nil {
		t.Fatal("colocated: no Deployment")
	}
	if got := containerNames(d); !slices.Equal(got, []string{"portcullis", "envoy", "drainer"}) {
		t.Errorf("colocated: the pod runs %v, want portcullis, envoy and drainer", got)
	}
	cs := podContainers(d)
	if m := missingArgs(cs["portcullis"], "--xds-address=127.0.0.1:8001", "--leader-elect"); len(m) > 0 {
		t.Errorf("colocated: the control plane lacks %v", m)
	}
	if m := missingArgs(cs["init:bootstrap"], "--xds-address=127.0.0.1:8001"); len(m) > 0 || strings.Contains(strings.Join(argsOf(cs["init:bootstrap"]), " "), "tls") {
		t.Errorf("colocated: bootstrap args %v, want loopback xDS without TLS", argsOf(cs["init:bootstrap"]))
	}
	checkEnvoyContainers(t, "colocated", d)
}

// checkCertManager: a self-signed CA of the release issues the two xDS
// Secrets the pods mount; the server's names are the Service's.
func checkCertManager(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, n := range []string{"t-portcullis-xds-selfsigned", "t-portcullis-xds-ca"} {
		if renderedObject(objs, "Issuer", n) == nil {
			t.Errorf("cert-manager: no Issuer %s", n)
		}
	}
	server := renderedObject(objs, "Certificate", "t-portcullis-xds-server")
	client := renderedObject(objs, "Certificate", "t-portcullis-xds-client")
	if server == nil || client == nil || renderedObject(objs, "Certificate", "t-portcullis-xds-ca") == nil {
		t.Fatal("cert-manager: want the CA, server and client Certificates")
	}
	names, _, _ := unstructured.NestedStringSlice(server.Object, "spec", "dnsNames")
	if !slices.Contains(names, "t-portcullis-xds."+chartNamespace+".svc") {
		t.Errorf("cert-manager: server dnsNames %v lack the name Envoy dials", names)
	}
	for _, c := range []*unstructured.Unstructured{server, client} {
		secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		issuer, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
		if secret != c.GetName() || issuer != "t-portcullis-xds-ca" {
			t.Errorf("cert-manager: Certificate %s: secret %q issuer %q", c.GetName(), secret, issuer)
		}
	}
}

// checkPodHardening: every container of every workload runs non-root
// with a read-only root filesystem and asks for resources.
func checkPodHardening(t *testing.T, name string, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
			continue
		}
		if nonRoot, _, _ := unstructured.NestedBool(o.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !nonRoot {
			t.Errorf("%s: %s %s may run as root", name, o.GetKind(), o.GetName())
		}
		for cname, c := range podContainers(o) {
			if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
				t.Errorf("%s: %s/%s has a writable root filesystem", name, o.GetName(), cname)
			}
			if strings.HasPrefix(cname, "init:") {
				continue
			}
			if req, _, _ := unstructured.NestedMap(c, "resources", "requests"); len(req) == 0 {
				t.Errorf("%s: %s/%s requests no resources", name, o.GetName(), cname)
			}
		}
	}
}

// nestedNumber reads a number of a decoded manifest (an int64 or a
// float64, as the decoder made it).
func nestedNumber(obj map[string]any, fields ...string) (int64, bool, error) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok || err != nil {
		return 0, ok, err
	}
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case float64:
		return int64(n), true, nil
	}
	return 0, false, fmt.Errorf("%v is a %T", fields, v)
}

// checkGeneratedXDSSecrets: without cert-manager the chart makes the xDS
// Secrets, whose certificates one CA signs: the server's for the xDS
// Service's names, the client's for client authentication.
func checkGeneratedXDSSecrets(t *testing.T, name string, objs []*unstructured.Unstructured) {
	t.Helper()
	cert := func(secret, key string) *x509.Certificate {
		o := renderedObject(objs, "Secret", secret)
		if o == nil {
			t.Errorf("%s: no Secret %s (xds.tls.generate)", name, secret)
			return nil
		}
		b64, _, _ := unstructured.NestedString(o.Object, "data", key)
		der, _ := base64.StdEncoding.DecodeString(b64)
		block, _ := pem.Decode(der)
		if block == nil {
			t.Errorf("%s: Secret %s's %s is not PEM", name, secret, key)
			return nil
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Errorf("%s: Secret %s's %s: %v", name, secret, key, err)
		}
		return c
	}
	ca, server, client := cert("t-portcullis-xds-server", "ca.crt"), cert("t-portcullis-xds-server", "tls.crt"), cert("t-portcullis-xds-client", "tls.crt")
	if clientCA := cert("t-portcullis-xds-client", "ca.crt"); ca == nil || server == nil || client == nil || clientCA == nil {
		return
	} else if !clientCA.Equal(ca) {
		t.Errorf("%s: the two xDS Secrets have different CAs", name)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "t-portcullis-xds." + chartNamespace + ".svc"}); err != nil {
		t.Errorf("%s: the xDS server certificate: %v", name, err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("%s: the xDS client certificate: %v", name, err)
	}
}

// checkOperations: with autoscaling the workloads leave replicas to their
// HorizontalPodAutoscaler, which targets them; every PodDisruptionBudget
// and NetworkPolicy selects the pods of a rendered workload, and the
// NetworkPolicies let Envoy's pods in (xDS, gRPC) and nothing else but
// metrics. Without the options, none of them but the PDBs.
func checkOperations(t *testing.T, objs, defaults []*unstructured.Unstructured) {
	t.Helper()
	podLabels := map[string]map[string]string{} // workload name -> its pod template's labels
	for _, o := range objs {
		if o.GetKind() == "Deployment" || o.GetKind() == "DaemonSet" {
			l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			podLabels[o.GetName()] = l
		}
	}
	selects := func(sel map[string]string) []string {
		var out []string
		for name, l := range podLabels {
			ok := len(sel) > 0
			for k, v := range sel {
				ok = ok && l[k] == v
			}
			if ok {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, name := range []string{"t-portcullis", "t-portcullis-authserver"} {
		hpa := renderedObject(objs, "HorizontalPodAutoscaler", name)
		if hpa == nil {
			t.Errorf("everything: no HorizontalPodAutoscaler %s", name)
			continue
		}
		if target, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "name"); target != name {
			t.Errorf("HorizontalPodAutoscaler %s targets %q", name, target)
		}
		if _, has, _ := unstructured.NestedFieldNoCopy(renderedObject(objs, "Deployment", name).Object, "spec", "replicas"); has {
			t.Errorf("Deployment %s sets replicas beside its autoscaler", name)
		}
	}
	if renderedObject(objs, "HorizontalPodAutoscaler", "t-portcullis-extprocserver") != nil {
		t.Error("extprocserver has an autoscaler it was not asked for")
	}
	for _, name := range []string{"t-portcullis", "t-portcullis-controlplane", "t-portcullis-authserver", "t-portcullis-extprocserver"} {
		pdb := renderedObject(objs, "PodDisruptionBudget", name)
		if pdb == nil {
			t.Errorf("everything: no PodDisruptionBudget %s", name)
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		if got := selects(sel); !slices.Equal(got, []string{name}) {
			t.Errorf("PodDisruptionBudget %s selects the pods of %v", name, got)
		}
	}
	wantPorts := map[string]string{"t-portcullis-controlplane": "xds", "t-portcullis-authserver": "grpc", "t-portcullis-extprocserver": "grpc"}
	for name, port := range wantPorts {
		np := renderedObject(objs, "NetworkPolicy", name)
		if np == nil {
			t.Errorf("everything: no NetworkPolicy %s", name)
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		if got := selects(sel); !slices.Equal(got, []string{name}) {
			t.Errorf("NetworkPolicy %s selects the pods of %v", name, got)
		}
		rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		var got []string
		for _, r := range rules {
			r := r.(map[string]any)
			var ports []string
			ps, _ := r["ports"].([]any)
			for _, p := range ps {
				ports = append(ports, fmt.Sprint(p.(map[string]any)["port"]))
			}
			var from []string
			fs, _ := r["from"].([]any)
			for _, f := range fs {
				l, _, _ := unstructured.NestedStringMap(f.(map[string]any), "podSelector", "matchLabels")
				from = append(from, strings.Join(selects(l), "+"))
			}
			if len(fs) == 0 {
				from = []string{"any"}
			}
			got = append(got, fmt.Sprintf("%v from %v", ports, from))
		}
		want := []string{fmt.Sprintf("[%s] from [t-portcullis]", port)}
		if port == "grpc" {
			want = append(want, "[metrics] from [any]")
		} else {
			want = append(want, "[cp-metrics] from [any]")
		}
		if !slices.Equal(got, want) {
			t.Errorf("NetworkPolicy %s lets in %v, want %v", name, got, want)
		}
	}
	for _, kind := range []string{"NetworkPolicy", "HorizontalPodAutoscaler"} {
		for _, o := range defaults {
			if o.GetKind() == kind {
				t.Errorf("defaults render %s %s", kind, o.GetName())
			}
		}
	}
}
