package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ExtensionService", "ExtensionServiceList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognize %s", GroupVersion.WithKind(kind))
		}
	}
	if GroupVersion.String() != "projectcontour.io/v1alpha1" {
		t.Errorf("GroupVersion = %s", GroupVersion)
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	proto := "h2c"
	in := &ExtensionService{
		Spec: ExtensionServiceSpec{
			Services:           []ExtensionServiceTarget{{Name: "s", Port: 9000}},
			Protocol:           &proto,
			UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "ca", SubjectName: "s"},
		},
		Status: ExtensionServiceStatus{Conditions: []contourv1.DetailedCondition{{}}},
	}
	out := in.DeepCopyObject().(*ExtensionService)
	out.Spec.Services[0].Port = 1
	*out.Spec.Protocol = "h2"
	out.Spec.UpstreamValidation.SubjectName = "other"
	out.Status.Conditions[0].AddError(contourv1.ConditionTypeServiceError, "ServiceNotFound", "x")
	if in.Spec.Services[0].Port != 9000 || *in.Spec.Protocol != "h2c" || in.Spec.UpstreamValidation.SubjectName != "s" || len(in.Status.Conditions[0].Errors) != 0 {
		t.Error("DeepCopy shares memory with its source")
	}
}
