package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ExtAuthPolicy", "ExtAuthPolicyList", "ExtProcPolicy", "ExtProcPolicyList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognize %s", GroupVersion.WithKind(kind))
		}
	}
	if GroupVersion.String() != "gateway.portcullis.dev/v1alpha1" {
		t.Errorf("GroupVersion = %s", GroupVersion)
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	section := gwapiv1.SectionName("https")
	targets := []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{
		LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Group: gwapiv1.GroupName, Kind: "Gateway", Name: "g"},
		SectionName:                &section,
	}}
	status := gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{{
		ControllerName: "portcullis.dev/gateway-controller",
		Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}},
	}}}

	auth := &ExtAuthPolicy{
		Spec: ExtAuthPolicySpec{
			TargetRefs:          targets,
			ExtensionServiceRef: &contourv1.ExtensionServiceReference{Name: "a"},
			AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{"k": "v"}},
		},
		Status: status,
	}
	ac := auth.DeepCopyObject().(*ExtAuthPolicy)
	*ac.Spec.TargetRefs[0].SectionName = "http"
	ac.Spec.ExtensionServiceRef.Name = "b"
	ac.Spec.AuthPolicy.Context["k"] = "w"
	ac.Status.Ancestors[0].Conditions[0].Status = metav1.ConditionFalse
	if *auth.Spec.TargetRefs[0].SectionName != "https" || auth.Spec.ExtensionServiceRef.Name != "a" || auth.Spec.AuthPolicy.Context["k"] != "v" ||
		auth.Status.Ancestors[0].Conditions[0].Status != metav1.ConditionTrue {
		t.Error("ExtAuthPolicy.DeepCopy shares memory with its source")
	}

	proc := &ExtProcPolicy{
		Spec: ExtProcPolicySpec{
			TargetRefs: targets,
			Processor:  &contourv1.ExtProc{GRPCService: &contourv1.GRPCService{ResponseTimeout: "1s"}},
		},
		Status: status,
	}
	pc := proc.DeepCopyObject().(*ExtProcPolicy)
	pc.Spec.TargetRefs[0].Name = "other"
	pc.Spec.Processor.GRPCService.ResponseTimeout = "2s"
	pc.Status.Ancestors[0].ControllerName = "x"
	if proc.Spec.TargetRefs[0].Name != "g" || proc.Spec.Processor.GRPCService.ResponseTimeout != "1s" || proc.Status.Ancestors[0].ControllerName != "portcullis.dev/gateway-controller" {
		t.Error("ExtProcPolicy.DeepCopy shares memory with its source")
	}
}

func TestAuthorizationServerOfAnEmptyPolicy(t *testing.T) {
	// No extensionRef (refused by the CRD unless disabled): an empty
	// reference, never a panic.
	var s ExtAuthPolicySpec
	if a := s.AuthorizationServer(); a == nil || a.ExtensionServiceRef != (contourv1.ExtensionServiceReference{}) || a.AuthPolicy != nil || a.WithRequestBody != nil {
		t.Errorf("AuthorizationServer() = %+v", a)
	}
	var p ExtProcPolicySpec
	if e := p.ExternalProcessor(); e == nil || e.Processor != nil || e.Disabled {
		t.Errorf("ExternalProcessor() = %+v", e)
	}
}
