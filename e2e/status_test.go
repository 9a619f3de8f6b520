package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// statusTimeout bounds every wait for the control plane to write a status.
const statusTimeout = 60 * time.Second

// kubeControlPlane is the API server, portcullis in kubernetes mode and
// Envoy, without the auth servers of the authorization scenario.
type kubeControlPlane struct {
	api                        *harness.APIServer
	httpAddr, httpsAddr, admin string
}

func startKubeControlPlane(t *testing.T, extraArgs ...string) *kubeControlPlane {
	api := harness.StartAPIServer(t, harness.CRDDirs(t)...)
	args := append([]string{"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath}, extraArgs...)
	httpAddr, httpsAddr, admin := harness.StartEnvoyAndControlPlane(t, args...)
	return &kubeControlPlane{api: api, httpAddr: httpAddr, httpsAddr: httpsAddr, admin: admin}
}

func (k *kubeControlPlane) apply(t *testing.T, objs ...client.Object) {
	t.Helper()
	if err := k.api.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
}

// proxyStatus reads an HTTPProxy back from the API server.
func (k *kubeControlPlane) proxy(namespace, name string) (*contourv1.HTTPProxy, error) {
	var p contourv1.HTTPProxy
	err := k.api.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p)
	return &p, err
}

func (k *kubeControlPlane) extension(namespace, name string) (*v1alpha1.ExtensionService, error) {
	var e v1alpha1.ExtensionService
	err := k.api.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &e)
	return &e, err
}

// want describes the expected Valid (or other) condition.
type want struct {
	typ          string // default Valid
	status       metav1.ConditionStatus
	reason       string
	message      string   // substring, if set
	errorTypes   []string // exactly these error sub-condition types, in order, if set
	warningTypes []string
	generation   int64 // observedGeneration, if set
}

func (w want) check(cs []contourv1.DetailedCondition) error {
	typ := w.typ
	if typ == "" {
		typ = contourv1.ValidConditionType
	}
	var c *contourv1.DetailedCondition
	for i := range cs {
		if cs[i].Type == typ {
			c = &cs[i]
		}
	}
	if c == nil {
		return fmt.Errorf("no %s condition yet (conditions: %+v)", typ, cs)
	}
	var errs, warns []string
	for _, e := range c.Errors {
		errs = append(errs, e.Type)
	}
	for _, e := range c.Warnings {
		warns = append(warns, e.Type)
	}
	switch {
	case c.Status != w.status || c.Reason != w.reason:
		return fmt.Errorf("%s = %s/%s (%q), want %s/%s", typ, c.Status, c.Reason, c.Message, w.status, w.reason)
	case w.message != "" && !strings.Contains(c.Message, w.message):
		return fmt.Errorf("%s message %q, want it to contain %q", typ, c.Message, w.message)
	case w.errorTypes != nil && !slices.Equal(errs, w.errorTypes):
		return fmt.Errorf("%s errors %v, want %v", typ, errs, w.errorTypes)
	case w.warningTypes != nil && !slices.Equal(warns, w.warningTypes):
		return fmt.Errorf("%s warnings %v, want %v", typ, warns, w.warningTypes)
	case w.generation != 0 && c.ObservedGeneration != w.generation:
		return fmt.Errorf("%s observedGeneration %d, want %d", typ, c.ObservedGeneration, w.generation)
	case c.LastTransitionTime.IsZero():
		return fmt.Errorf("%s has no lastTransitionTime", typ)
	}
	return nil
}

func (k *kubeControlPlane) eventuallyProxy(t *testing.T, namespace, name string, w want) *contourv1.HTTPProxy {
	t.Helper()
	var p *contourv1.HTTPProxy
	harness.Eventually(t, statusTimeout, func() error {
		var err error
		if p, err = k.proxy(namespace, name); err != nil {
			return err
		}
		if err := w.check(p.Status.Conditions); err != nil {
			return fmt.Errorf("HTTPProxy %s/%s: %w", namespace, name, err)
		}
		return nil
	})
	return p
}

func (k *kubeControlPlane) eventuallyExtension(t *testing.T, namespace, name string, ws ...want) *v1alpha1.ExtensionService {
	t.Helper()
	var e *v1alpha1.ExtensionService
	harness.Eventually(t, statusTimeout, func() error {
		var err error
		if e, err = k.extension(namespace, name); err != nil {
			return err
		}
		for _, w := range ws {
			if err := w.check(e.Status.Conditions); err != nil {
				return fmt.Errorf("ExtensionService %s/%s: %w", namespace, name, err)
			}
		}
		return nil
	})
	return e
}

// endpointSlice is a Service's EndpointSlice with the given addresses
// (non-loopback: the API server refuses loopback ones), the first `ready`
// of them ready.
func endpointSlice(namespace, service, port string, portNumber int32, ready int, addrs ...string) *discoveryv1.EndpointSlice {
	tcp := corev1.ProtocolTCP
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: service + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &port, Port: &portNumber, Protocol: &tcp}},
	}
	for i, a := range addrs {
		r := i < ready
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &r}})
	}
	return es
}

func condition(cs []contourv1.DetailedCondition, typ string) *contourv1.DetailedCondition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return &contourv1.DetailedCondition{}
}

func clusterIPService(namespace, name, port string, number int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: port, Port: number, Protocol: corev1.ProtocolTCP}}}}
}

func namespaces(names ...string) []client.Object {
	var out []client.Object
	for _, n := range names {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

// TestStatusConditionsKubernetes checks the status model as an operator
// sees it: read back from the API server, written by portcullis in
// kubernetes mode.
func TestStatusConditionsKubernetes(t *testing.T) {
	k := startKubeControlPlane(t)
	ca := harness.NewCA(t, "portcullis-status")
	const ns = "status"
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	h2c := "h2c"

	k.apply(t, namespaces(ns, "certs", "team")...)
	k.apply(t,
		ca.Issue(t, "valid.example.com").Secret(ns, "server-tls"),
		ca.Issue(t, "shared.example.com").Secret("certs", "shared"),
		clusterIPService(ns, "echo", "http", 80), endpointSlice(ns, "echo", "http", 8080, 1, "10.10.0.1"),
		clusterIPService("team", "echo", "http", 80), endpointSlice("team", "echo", "http", 8080, 1, "10.10.0.2"),
		clusterIPService(ns, "auth", "grpc", 9000), endpointSlice(ns, "auth", "grpc", 9000, 2, "10.10.1.1", "10.10.1.2", "10.10.1.3"),
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auth"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth", Port: 9000}},
				HealthCheckPolicy: &v1alpha1.GRPCHealthCheckPolicy{IntervalSeconds: 30}}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec: v1alpha1.ExtensionServiceSpec{TimeoutPolicy: &contourv1.TimeoutPolicy{Response: "99999999999h"},
				Services: []v1alpha1.ExtensionServiceTarget{{Name: "no-such-service", Port: 9000}}}},
		// The MultipleReasons sample of docs/design/status-conditions.md.
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "multi"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "multi.example.com", TLS: &contourv1.TLS{SecretName: "testsecret-does-not-exist"}},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "service-does-not-exist", Port: 80}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "valid"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "valid.example.com", TLS: &contourv1.TLS{SecretName: "server-tls"},
				Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "auth"}}},
			Routes: []contourv1.Route{{Services: echo}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "undelegated"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "undelegated.example.com", TLS: &contourv1.TLS{SecretName: "certs/shared"}},
			Routes:      []contourv1.Route{{Services: echo}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "delegated"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "shared.example.com", TLS: &contourv1.TLS{SecretName: "certs/shared"}},
			Routes:      []contourv1.Route{{Services: echo}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Services: echo}},
		}},
		&contourv1.TLSCertificateDelegation{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "shared"}, Spec: contourv1.TLSCertificateDelegationSpec{
			Delegations: []contourv1.CertificateDelegation{{SecretName: "shared", TargetNamespaces: []string{"team", "Not_A_Namespace"}}},
		}},
	)

	t.Run("Valid with error sub-conditions and MultipleReasons, legacy fields in step", func(t *testing.T) {
		p := k.eventuallyProxy(t, ns, "multi", want{status: metav1.ConditionFalse, reason: "MultipleReasons",
			errorTypes: []string{contourv1.ConditionTypeTLSError, contourv1.ConditionTypeServiceError}})
		c := p.Status.GetCondition(contourv1.ValidConditionType)
		if p.Status.CurrentStatus != "invalid" || p.Status.Description != c.Message {
			t.Errorf("currentStatus/description = %q/%q, want invalid/%q", p.Status.CurrentStatus, p.Status.Description, c.Message)
		}
		if c.ObservedGeneration != p.Generation {
			t.Errorf("observedGeneration = %d, want the object's generation %d", c.ObservedGeneration, p.Generation)
		}
		k.eventuallyProxy(t, ns, "valid", want{status: metav1.ConditionTrue, reason: "Valid"})
		k.eventuallyProxy(t, ns, "orphan", want{status: metav1.ConditionFalse, reason: "Orphaned", errorTypes: []string{"Orphaned"}})
	})

	t.Run("observedGeneration follows the spec", func(t *testing.T) {
		p, err := k.proxy(ns, "multi")
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Routes = append(p.Spec.Routes, contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: "/two"}}, Services: echo})
		k.apply(t, p)
		k.eventuallyProxy(t, ns, "multi", want{status: metav1.ConditionFalse, reason: "MultipleReasons", generation: p.Generation})
		if p.Generation < 2 {
			t.Errorf("generation %d after a spec change", p.Generation)
		}
	})

	t.Run("TLSCertificateDelegation: its own Valid, delegation honoured, undelegated use is a TLSError", func(t *testing.T) {
		harness.Eventually(t, statusTimeout, func() error {
			var d contourv1.TLSCertificateDelegation
			if err := k.api.Client.Get(context.Background(), client.ObjectKey{Namespace: "certs", Name: "shared"}, &d); err != nil {
				return err
			}
			return want{status: metav1.ConditionFalse, reason: "TargetNamespaceInvalid", errorTypes: []string{"DelegationError"}, generation: d.Generation}.check(d.Status.Conditions)
		})
		k.eventuallyProxy(t, "team", "delegated", want{status: metav1.ConditionTrue, reason: "Valid"})
		k.eventuallyProxy(t, ns, "undelegated", want{status: metav1.ConditionFalse, reason: "DelegationNotPermitted",
			errorTypes: []string{contourv1.ConditionTypeTLSError}, message: "certificate delegation not permitted"})
	})

	t.Run("ExtensionService Valid, Ready with endpoint counts, clusterName", func(t *testing.T) {
		e := k.eventuallyExtension(t, ns, "auth",
			want{status: metav1.ConditionTrue, reason: "Valid"},
			want{typ: "Ready", status: metav1.ConditionTrue, reason: "SomeEndpointsNotReady", message: "2/3 endpoints ready"})
		if e.Status.ClusterName != "extension/status/auth" {
			t.Errorf("clusterName = %q, want extension/status/auth", e.Status.ClusterName)
		}
		b := k.eventuallyExtension(t, ns, "broken",
			want{status: metav1.ConditionFalse, reason: "MultipleReasons", errorTypes: []string{"SpecError", "ServiceError"}},
			want{typ: "Ready", status: metav1.ConditionFalse, reason: "Invalid"})
		if b.Status.ClusterName != "" {
			t.Errorf("an invalid ExtensionService has clusterName %q", b.Status.ClusterName)
		}
	})

	t.Run("lastTransitionTime and the object stay put across unrelated rebuilds", func(t *testing.T) {
		before := k.eventuallyProxy(t, ns, "valid", want{status: metav1.ConditionTrue, reason: "Valid"})
		ext := k.eventuallyExtension(t, ns, "auth", want{status: metav1.ConditionTrue, reason: "Valid"})
		writes := harness.MetricValue(t, "http://"+k.admin+"/metrics", "portcullis_status_writes_total")
		reused := harness.MetricValue(t, "http://"+k.admin+"/metrics", "portcullis_roots_reused_total")
		// Unrelated changes: each triggers a rebuild; the marker's status
		// proves the rebuilds (and their status writes) happened.
		k.apply(t, clusterIPService(ns, "unrelated", "http", 80))
		k.apply(t, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "marker"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "marker.example.com"}, Routes: []contourv1.Route{{Services: echo}}}})
		k.eventuallyProxy(t, ns, "marker", want{status: metav1.ConditionTrue, reason: "Valid"})

		after, err := k.proxy(ns, "valid")
		if err != nil {
			t.Fatal(err)
		}
		bc, ac := before.Status.GetCondition("Valid"), after.Status.GetCondition("Valid")
		if !bc.LastTransitionTime.Equal(&ac.LastTransitionTime) {
			t.Errorf("lastTransitionTime moved from %v to %v without a transition", bc.LastTransitionTime, ac.LastTransitionTime)
		}
		if before.ResourceVersion != after.ResourceVersion {
			t.Errorf("resourceVersion %s -> %s: the unchanged status was written again", before.ResourceVersion, after.ResourceVersion)
		}
		extAfter, err := k.extension(ns, "auth")
		if err != nil {
			t.Fatal(err)
		}
		if ext.ResourceVersion != extAfter.ResourceVersion {
			t.Errorf("ExtensionService resourceVersion %s -> %s: the unchanged status was written again", ext.ResourceVersion, extAfter.ResourceVersion)
		}
		// Two rebuilds, one changed status (the marker's). A conflict may
		// cost one retry; rewriting the unchanged ones would cost a dozen.
		if d := harness.MetricValue(t, "http://"+k.admin+"/metrics", "portcullis_status_writes_total") - writes; d < 1 || d > 2 {
			t.Errorf("%v status writes for one changed status", d)
		}
		// The roots whose objects did not change were not built again:
		// the informers hand out the same objects (builder.Memo). One or
		// two rebuilds (the debounce may join them); a root whose status
		// write lands meanwhile is a new object and is built again, so
		// count at least the four unchanged roots (valid, multi,
		// undelegated, delegated) once.
		if d := harness.MetricValue(t, "http://"+k.admin+"/metrics", "portcullis_roots_reused_total") - reused; d < 4 {
			t.Errorf("%v roots reused by the rebuilds of unrelated changes, want at least 4", d)
		}
	})

	t.Run("Ready flips when the endpoints disappear, and back", func(t *testing.T) {
		e := k.eventuallyExtension(t, ns, "auth", want{typ: "Ready", status: metav1.ConditionTrue, reason: "SomeEndpointsNotReady"})
		readySince := condition(e.Status.Conditions, "Ready").LastTransitionTime
		validSince := condition(e.Status.Conditions, "Valid").LastTransitionTime
		// Transition times have a one-second resolution: make the flip's
		// observable.
		time.Sleep(1100 * time.Millisecond)
		if err := k.api.Delete(context.Background(), endpointSlice(ns, "auth", "grpc", 9000, 0)); err != nil {
			t.Fatal(err)
		}
		e = k.eventuallyExtension(t, ns, "auth",
			want{typ: "Ready", status: metav1.ConditionFalse, reason: "NoReadyEndpoints", message: "0/0 endpoints ready"},
			want{status: metav1.ConditionTrue, reason: "Valid"})
		valid, ready := condition(e.Status.Conditions, "Valid"), condition(e.Status.Conditions, "Ready")
		if !valid.LastTransitionTime.Equal(&validSince) {
			t.Errorf("Valid lastTransitionTime moved (%v -> %v) though Valid did not change", validSince, valid.LastTransitionTime)
		}
		if !readySince.Before(&ready.LastTransitionTime) {
			t.Errorf("Ready lastTransitionTime %v did not move on the transition (was %v)", ready.LastTransitionTime, readySince)
		}
		k.apply(t, endpointSlice(ns, "auth", "grpc", 9000, 3, "10.10.1.1", "10.10.1.2", "10.10.1.3"))
		k.eventuallyExtension(t, ns, "auth", want{typ: "Ready", status: metav1.ConditionTrue, reason: "EndpointsReady", message: "3/3 endpoints ready"})
	})

	t.Run("a host name claimed twice stays with the oldest claim (creationTimestamp), and passes on when it goes", func(t *testing.T) {
		// By namespace/name alone status/a-taker would come first: the
		// API server's creation times decide.
		owner := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "z-owner"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "owned.example.com"}, Routes: []contourv1.Route{{Services: echo}}}}
		k.apply(t, owner)
		k.eventuallyProxy(t, "team", "z-owner", want{status: metav1.ConditionTrue, reason: "Valid"})
		time.Sleep(1100 * time.Millisecond) // creation times have a one-second resolution
		k.apply(t, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-taker"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "owned.example.com"}, Routes: []contourv1.Route{{Services: echo}}}})
		k.eventuallyProxy(t, ns, "a-taker", want{status: metav1.ConditionFalse, reason: "DuplicateVhost",
			errorTypes: []string{contourv1.ConditionTypeVirtualHostError}, message: "already used by HTTPProxy team/z-owner"})
		k.eventuallyProxy(t, "team", "z-owner", want{status: metav1.ConditionTrue, reason: "Valid"})
		if err := k.api.Delete(context.Background(), owner); err != nil {
			t.Fatal(err)
		}
		k.eventuallyProxy(t, ns, "a-taker", want{status: metav1.ConditionTrue, reason: "Valid"})
	})
}
