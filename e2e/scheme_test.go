package e2e

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// The scenarios' clients and manifests know the project's API types.
func init() {
	utilruntime.Must(contourv1.AddToScheme(harness.Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(harness.Scheme))
}
