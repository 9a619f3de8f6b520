package builder

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// ExtensionKinds are the kinds the extension servers registered
// (config extensions[]), by what routes do with them. The builder only
// finds the objects and hands them over (ir.Route.Extension); the
// extension package calls the hooks.
type ExtensionKinds struct {
	// Resources: referenced by ExtensionRef filters.
	Resources map[schema.GroupKind]bool
	// Backends: referenced as backendRefs.
	Backends map[schema.GroupKind]bool
	// Policies: attached with spec.targetRefs.
	Policies map[schema.GroupKind]bool
}

// extensionKindsOf the configuration file's extensions.
func extensionKindsOf(c *config.Config) ExtensionKinds {
	var k ExtensionKinds
	add := func(m *map[schema.GroupKind]bool, kinds []config.GroupVersionKind) {
		for _, r := range kinds {
			if *m == nil {
				*m = map[schema.GroupKind]bool{}
			}
			(*m)[schema.GroupKind{Group: r.Group, Kind: r.Kind}] = true
		}
	}
	for _, e := range c.Extensions {
		add(&k.Resources, e.Resources)
		add(&k.Backends, e.BackendResources)
		add(&k.Policies, e.PolicyResources)
	}
	return k
}

// extKey names one object of an extension's kind.
type extKey struct {
	gk              schema.GroupKind
	namespace, name string
}

// indexExtensions indexes the objects of the extensions' kinds.
func (s *snapshot) indexExtensions() {
	if len(s.in.Extensions) == 0 {
		return
	}
	s.extObjects = make(map[extKey]*unstructured.Unstructured, len(s.in.Extensions))
	for _, u := range s.in.Extensions {
		s.extObjects[extKey{u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName()}] = u
	}
}
