package v1

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"HTTPProxy", "HTTPProxyList", "TLSCertificateDelegation", "TLSCertificateDelegationList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognize %s", GroupVersion.WithKind(kind))
		}
	}
	gvks, _, err := s.ObjectKinds(&HTTPProxy{})
	if err != nil || len(gvks) != 1 || gvks[0].Group != "projectcontour.io" || gvks[0].Version != "v1" {
		t.Errorf("ObjectKinds(HTTPProxy) = %v, %v", gvks, err)
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	proto := "h2"
	in := &HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: HTTPProxySpec{
			VirtualHost: &VirtualHost{
				Fqdn: "a.example.com",
				Authorization: &AuthorizationServer{
					ExtensionServiceRef: ExtensionServiceReference{Name: "auth"},
					AuthPolicy:          &AuthorizationPolicy{Context: map[string]string{"k": "v"}},
				},
				ExtProc: &ExternalProcessor{Processor: &ExtProc{GRPCService: &GRPCService{ResponseTimeout: "1s"}}},
			},
			Routes: []Route{{
				Services: []Service{{Name: "s", Port: 80, Protocol: &proto}},
			}},
		},
	}
	out := in.DeepCopyObject().(*HTTPProxy)
	out.Spec.VirtualHost.Authorization.AuthPolicy.Context["k"] = "changed"
	*out.Spec.Routes[0].Services[0].Protocol = "tls"
	out.Spec.VirtualHost.ExtProc.Processor.GRPCService.ResponseTimeout = "2s"
	if in.Spec.VirtualHost.Authorization.AuthPolicy.Context["k"] != "v" ||
		*in.Spec.Routes[0].Services[0].Protocol != "h2" ||
		in.Spec.VirtualHost.ExtProc.Processor.GRPCService.ResponseTimeout != "1s" {
		t.Error("DeepCopy shares memory with its source")
	}
}

func TestEmptyExtensionRefIsOmitted(t *testing.T) {
	// `authorization: {globalExtAuthDisabled: true}` is valid on its own; a
	// zero extensionRef must not be written back as `extensionRef: {}`, which
	// the CRD schema would reject (extensionRef.name is required).
	b, err := json.Marshal(AuthorizationServer{GlobalExternalAuthorizationDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"globalExtAuthDisabled":true}`; got != want {
		t.Errorf("json = %s, want %s", got, want)
	}
	b, err = json.Marshal(GRPCService{FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"failOpen":true}`; got != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}
