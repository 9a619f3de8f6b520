package builder

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// A collector that is missing or invalid is reported once, as
// TracingUnavailable, and changes nothing else: the HTTPProxy stays valid,
// without a warning, and the tracer exports to the ExtensionService's
// cluster (kept without endpoints until it is fixed).
func TestTracingCollectorUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ext     []*v1alpha1.ExtensionService
		problem string // "" for none
	}{
		{"missing", nil, `ExtensionService "obs/otel" not found`},
		{"invalid", []*v1alpha1.ExtensionService{{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "otel"},
			Spec: v1alpha1.ExtensionServiceSpec{Services: []v1alpha1.ExtensionServiceTarget{{Name: "nope", Port: 4317}}}}},
			`ExtensionService "obs/otel" is invalid`},
		{"valid", []*v1alpha1.ExtensionService{{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "otel"},
			Spec: v1alpha1.ExtensionServiceSpec{Services: []v1alpha1.ExtensionServiceTarget{{Name: "otel", Port: 4317}}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &objects.Set{
				HTTPProxies:       []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)},
				ExtensionServices: tc.ext,
				Services: []*corev1.Service{
					{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
					{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "otel"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 4317}}}},
				},
			}
			set.Sort()
			res := Build(set, core.Options{Tracing: &config.Tracing{ExtensionService: "obs/otel"}})
			var problems []string
			for _, p := range res.Unavailable {
				if p.Reason != status.ReasonTracingUnavailable {
					t.Errorf("unexpected problem %+v", p)
				}
				problems = append(problems, p.Message)
			}
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.problem)):
				t.Errorf("problems %q, want one saying %q", problems, tc.problem)
			}
			if tr := res.Model.Tracing; tr == nil || tr.Cluster != "extension/obs/otel" || tr.ServiceName != config.DefaultTracingServiceName {
				t.Errorf("model tracing = %+v, want the ExtensionService's cluster and the defaults", tr)
			}
			for _, o := range res.Status {
				if o.Ref.Kind != objects.KindHTTPProxy {
					continue
				}
				// Its one warning is its Service's (no endpoints here).
				if len(o.Errors) > 0 || len(o.Warnings) != 1 || o.Warnings[0].Reason != status.ReasonNoEndpoints {
					t.Errorf("%v: errors %v, warnings %v; want only NoEndpoints", o.Ref, o.Errors, o.Warnings)
				}
			}
		})
	}
}
