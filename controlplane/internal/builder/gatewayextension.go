package builder

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ExtensionKinds are the kinds the extension servers registered
// (config extensions[]), by what routes do with them. The builder only
// finds the objects and hands them over (ir.Route.Extension); the
// extension package calls the hooks.
type ExtensionKinds struct {
	// Resources: referenced by ExtensionRef filters.
	Resources map[schema.GroupKind]bool
}

// extensionKindsOf the configuration file's extensions.
func extensionKindsOf(c *config.Config) ExtensionKinds {
	var k ExtensionKinds
	for _, e := range c.Extensions {
		for _, r := range e.Resources {
			if k.Resources == nil {
				k.Resources = map[schema.GroupKind]bool{}
			}
			k.Resources[schema.GroupKind{Group: r.Group, Kind: r.Kind}] = true
		}
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

// extensionRef adds the object an ExtensionRef filter names to x's
// extension resources; false, with the reason in ResolvedRefs, when no
// extension registered its kind or it does not exist: the rule then
// answers 500 (the API: a filter that cannot be resolved is not skipped).
func (b *routeBuild) extensionRef(ref *gwapiv1.LocalObjectReference, where string, x *ir.Route) bool {
	if ref == nil {
		b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: %v: the rule answers 500", where, errFilterConfig)
		return false
	}
	gk := schema.GroupKind{Group: string(ref.Group), Kind: string(ref.Kind)}
	if !b.r.opts().Extensions.Resources[gk] {
		b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s: ExtensionRef %s %q: no extension registered this kind (extensions[].resources of the configuration file): the rule answers 500", where, gk, ref.Name)
		return false
	}
	u := b.r.extensionObject(extKey{gk, b.rt.ref.Namespace, string(ref.Name)})
	if u == nil {
		b.refs.add(string(gwapiv1.RouteReasonBackendNotFound), "%s: ExtensionRef %s %q: not found in namespace %q: the rule answers 500", where, gk, ref.Name, b.rt.ref.Namespace)
		return false
	}
	js, err := extensionJSON(u)
	if err != nil {
		b.refs.add(string(gwapiv1.RouteReasonInvalidKind), "%s: ExtensionRef %s %q: %v: the rule answers 500", where, gk, ref.Name, err)
		return false
	}
	if x.Extension == nil {
		x.Extension = &ir.RouteExtension{}
	}
	x.Extension.Resources = append(x.Extension.Resources, ir.ExtensionResource{Group: gk.Group, Kind: gk.Kind, JSON: js})
	return true
}

// extensionJSON is the object as the extension receives it: as the API
// server serves it, without metadata.managedFields (the API server's
// bookkeeping, which changes on every write and would defeat the hook
// cache).
func extensionJSON(u *unstructured.Unstructured) ([]byte, error) {
	if _, ok := u.Object["metadata"].(map[string]any)["managedFields"]; ok {
		u = u.DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	}
	return u.MarshalJSON()
}

// withExtensionContext completes the extension part of x, the route of
// match j of rule i: where it came from, and the name its Envoy route
// gets (the hooks find it by it). Routes without extension resources are
// left as they are: unnamed.
func withExtensionContext(b *routeBuild, x *ir.Route, i, j int, ruleName *gwapiv1.SectionName) {
	if x.Extension == nil {
		return
	}
	e := *x.Extension
	e.Kind, e.Namespace, e.Name, e.RuleIndex = b.rt.ref.Kind, b.rt.ref.Namespace, b.rt.ref.Name, i
	if ruleName != nil {
		e.RuleName = string(*ruleName)
	}
	x.Extension = &e
	x.Name = fmt.Sprintf("%s/%s/%s/rule/%d/match/%d", strings.ToLower(e.Kind), e.Namespace, e.Name, i, j)
}
