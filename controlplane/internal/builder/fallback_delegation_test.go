package builder

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// A fallback certificate Secret of another namespace that is not delegated
// is FallbackNotDelegated whether or not it exists, as in Contour, which
// checks the delegation first.
func TestFallbackNotDelegatedBeforeNotFound(t *testing.T) {
	p := &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "root"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "db.example.com", TLS: &contourv1.TLS{SecretName: "ca", EnableFallbackCertificate: true}},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "db", Port: 5432}}}},
		},
	}
	res := Build(tcpServiceSet(t, p), core.Options{FallbackCertificate: "other/missing"})
	var reasons []string
	for _, e := range res.Status[0].Errors {
		reasons = append(reasons, e.Reason)
	}
	found := false
	for _, r := range reasons {
		if r == status.ReasonFallbackNotValid {
			t.Errorf("reasons %v: FallbackNotValid for a Secret not delegated", reasons)
		}
		found = found || r == status.ReasonFallbackNotDelegated
	}
	if !found {
		t.Errorf("reasons %v, want FallbackNotDelegated", reasons)
	}
}
