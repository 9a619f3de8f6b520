package core

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
	// Any: at least one extension is registered. Every route then gets a
	// name and its origin (ir.Route.Name, Origin), which extensions find
	// routes by; without extensions, Envoy's configuration stays as it
	// was, with nothing to pay for them.
	Any bool
}

// extensionKindsOf the configuration file's extensions.
func extensionKindsOf(c *config.Config) ExtensionKinds {
	k := ExtensionKinds{Any: len(c.Extensions) > 0}
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

// ExtKey names one object of an extension's kind.
type ExtKey struct {
	GK              schema.GroupKind
	Namespace, Name string
}

// indexExtensions indexes the objects of the extensions' kinds.
func (s *Snapshot) indexExtensions() {
	if len(s.In.Extensions) == 0 {
		return
	}
	s.extObjects = make(map[ExtKey]*unstructured.Unstructured, len(s.In.Extensions))
	for _, u := range s.In.Extensions {
		s.extObjects[ExtKey{u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName()}] = u
	}
}
