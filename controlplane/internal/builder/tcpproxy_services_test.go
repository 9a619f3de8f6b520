package builder

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestTCPProxyServices: a tcpproxy's service sets on its cluster what a
// route's service does (TLS with validation, slow start, a health check
// port), validated the same way with the same reasons.
func TestTCPProxyServices(t *testing.T) {
	validation := &contourv1.UpstreamValidation{CACertificate: "ca", SubjectName: "db.default.svc", SubjectNames: []string{"db.default.svc", "db.example.com"}}
	checks := &contourv1.TCPHealthCheckPolicy{}
	for _, tc := range []struct {
		name    string
		svc     contourv1.Service
		lb      string
		checks  *contourv1.TCPHealthCheckPolicy
		want    func(t *testing.T, c *ir.Cluster)
		reason  string // an error's; "" for a valid HTTPProxy
		warning string
	}{
		{name: "tls with validation", svc: contourv1.Service{Protocol: core.PtrTo("tls"), UpstreamValidation: validation}, want: func(t *testing.T, c *ir.Cluster) {
			if c.Protocol != ir.TLS || c.Validation == nil || c.Validation.CASecret != "default/ca/ca.crt" || len(c.Validation.SubjectNames) != 2 || c.SNI != "db.default.svc" {
				t.Errorf("cluster %+v, want TLS validated by default/ca with both names, SNI db.default.svc", c)
			}
		}},
		{name: "tls without validation", svc: contourv1.Service{Protocol: core.PtrTo("tls")}, want: func(t *testing.T, c *ir.Cluster) {
			if c.Protocol != ir.TLS || c.Validation != nil {
				t.Errorf("cluster %+v, want TLS without validation", c)
			}
		}},
		{name: "h2 is TLS offering h2", svc: contourv1.Service{Protocol: core.PtrTo("h2"), UpstreamValidation: validation}, want: func(t *testing.T, c *ir.Cluster) {
			if c.Protocol != ir.H2 || c.Validation == nil {
				t.Errorf("cluster %+v, want h2 with validation", c)
			}
		}},
		{name: "h2c is the plaintext cluster", svc: contourv1.Service{Protocol: core.PtrTo("h2c")}, want: func(t *testing.T, c *ir.Cluster) {
			if c.Protocol != ir.HTTP1 || c.Name != "service/default/db/5432" {
				t.Errorf("cluster %s (%s), want the plaintext service/default/db/5432", c.Name, c.Protocol)
			}
		}},
		{name: "unknown protocol", svc: contourv1.Service{Protocol: core.PtrTo("http")}, reason: status.ReasonUnsupportedProtocol},
		{name: "validation without TLS", svc: contourv1.Service{UpstreamValidation: validation}, reason: status.ReasonTLSUpstreamValidation},
		{name: "validation with h2c", svc: contourv1.Service{Protocol: core.PtrTo("h2c"), UpstreamValidation: validation}, reason: status.ReasonTLSUpstreamValidation},
		{name: "CA not found", svc: contourv1.Service{Protocol: core.PtrTo("tls"), UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "nowhere", SubjectName: "db"}}, reason: status.ReasonTLSUpstreamValidation},
		{name: "CA of another namespace, not delegated", svc: contourv1.Service{Protocol: core.PtrTo("tls"), UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "other/ca", SubjectName: "db"}}, reason: status.ReasonCACertificateNotDelegated},
		{name: "subjectNames[0] not subjectName", svc: contourv1.Service{Protocol: core.PtrTo("tls"), UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "ca", SubjectName: "db", SubjectNames: []string{"other"}}}, reason: status.ReasonTLSUpstreamValidation},
		{name: "slow start, RoundRobin", svc: contourv1.Service{SlowStartPolicy: &contourv1.SlowStartPolicy{Window: "30s", Aggression: "2", MinimumWeightPercent: 10}}, want: func(t *testing.T, c *ir.Cluster) {
			if c.SlowStart == nil || *c.SlowStart != (ir.SlowStart{Window: 30 * time.Second, Aggression: 2, MinWeightPercent: 10}) {
				t.Errorf("slow start %+v, want 30s, 2, 10%%", c.SlowStart)
			}
		}},
		{name: "slow start, WeightedLeastRequest", lb: "WeightedLeastRequest", svc: contourv1.Service{SlowStartPolicy: &contourv1.SlowStartPolicy{Window: "1m"}}, want: func(t *testing.T, c *ir.Cluster) {
			if c.SlowStart == nil || c.LBPolicy != "WeightedLeastRequest" {
				t.Errorf("cluster %+v, want slow start with WeightedLeastRequest", c)
			}
		}},
		{name: "slow start, Random", lb: "Random", svc: contourv1.Service{SlowStartPolicy: &contourv1.SlowStartPolicy{Window: "1m"}}, reason: status.ReasonSlowStartInvalid},
		{name: "slow start, bad window", svc: contourv1.Service{SlowStartPolicy: &contourv1.SlowStartPolicy{Window: "soon"}}, reason: status.ReasonSlowStartInvalid},
		{name: "healthPort", checks: checks, svc: contourv1.Service{HealthPort: 8081}, want: func(t *testing.T, c *ir.Cluster) {
			if c.HealthCheck == nil || !c.HealthCheck.TCP || len(c.Endpoints) != 1 || c.Endpoints[0].HealthPort != 18081 {
				t.Errorf("cluster %+v, want TCP checks on the endpoint's port 18081", c)
			}
		}},
		{name: "healthPort is the port", checks: checks, svc: contourv1.Service{HealthPort: 5432}, want: func(t *testing.T, c *ir.Cluster) {
			if c.Endpoints[0].HealthPort != 0 {
				t.Errorf("health port %d, want none (the endpoint's own)", c.Endpoints[0].HealthPort)
			}
		}},
		{name: "healthPort not a port of the Service", checks: checks, svc: contourv1.Service{HealthPort: 9999}, reason: status.ReasonServiceUnresolvedReference},
		{name: "healthPort out of range", checks: checks, svc: contourv1.Service{HealthPort: 70000}, reason: status.ReasonServicePortInvalid},
		{name: "healthPort without checks", svc: contourv1.Service{HealthPort: 8081}, warning: status.ReasonHealthCheckPolicyInvalid, want: func(t *testing.T, c *ir.Cluster) {
			if c.HealthCheck != nil || c.Endpoints[0].HealthPort != 0 {
				t.Errorf("cluster %+v, want no health checks", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc
			svc.Name, svc.Port = "db", 5432
			p := &contourv1.HTTPProxy{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "root"},
				Spec: contourv1.HTTPProxySpec{
					VirtualHost: &contourv1.VirtualHost{Fqdn: "db.example.com", TLS: &contourv1.TLS{Passthrough: true}},
					TCPProxy:    &contourv1.TCPProxy{Services: []contourv1.Service{svc}, HealthCheckPolicy: tc.checks},
				},
			}
			if tc.lb != "" {
				p.Spec.TCPProxy.LoadBalancerPolicy = &contourv1.LoadBalancerPolicy{Strategy: tc.lb}
			}
			res := Build(tcpServiceSet(t, p), core.Options{})
			st := res.Status[0]
			if tc.reason != "" {
				if len(st.Errors) != 1 || st.Errors[0].Reason != tc.reason || len(res.Model.Listener(ir.HTTPSListenerName).TCPHosts) != 0 {
					t.Fatalf("errors %+v, TCP hosts %d; want one %s error and the host unserved", st.Errors, len(res.Model.Listener(ir.HTTPSListenerName).TCPHosts), tc.reason)
				}
				return
			}
			if len(st.Errors) != 0 {
				t.Fatalf("errors %+v, want none", st.Errors)
			}
			if tc.warning != "" && (len(st.Warnings) != 1 || st.Warnings[0].Reason != tc.warning) {
				t.Errorf("warnings %+v, want one %s", st.Warnings, tc.warning)
			}
			if len(res.Model.Listener(ir.HTTPSListenerName).TCPHosts) != 1 || len(res.Model.Listener(ir.HTTPSListenerName).TCPHosts[0].Clusters) != 1 {
				t.Fatalf("TCP hosts %+v, want one with one cluster", res.Model.Listener(ir.HTTPSListenerName).TCPHosts)
			}
			name := res.Model.Listener(ir.HTTPSListenerName).TCPHosts[0].Clusters[0].Cluster
			for _, c := range res.Model.Clusters {
				if c.Name == name {
					tc.want(t, c)
					return
				}
			}
			t.Fatalf("no cluster %s in the model", name)
		})
	}
}

// tcpServiceSet is p with the Service db (port 5432, health port 8081 on
// 18081), its endpoint, and a CA Secret default/ca (other/ca too, not
// delegated).
func tcpServiceSet(t *testing.T, p *contourv1.HTTPProxy) *objects.Set {
	t.Helper()
	ca := map[string][]byte{core.CAKey: testCAPEM(t)}
	set := &objects.Set{
		HTTPProxies: []*contourv1.HTTPProxy{p},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "tls", Port: 5432}, {Name: "health", Port: 8081},
		}}}},
		EndpointSlices: []*discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "db-1", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: core.PtrTo("tls"), Port: core.PtrTo(int32(15432))}, {Name: core.PtrTo("health"), Port: core.PtrTo(int32(18081))}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		}},
		Secrets: []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"}, Data: ca},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "ca"}, Data: ca},
		},
	}
	set.Sort()
	return set
}

// testCAPEM is a self-signed CA certificate.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
