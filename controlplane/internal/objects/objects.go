// Package objects holds one immutable snapshot of the control plane's input
// objects, whichever provider read them, and decodes them from YAML.
package objects

import (
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// Set is everything the builder reads. Providers build a new Set for every
// change; nothing modifies a Set once built.
type Set struct {
	HTTPProxies       []*contourv1.HTTPProxy
	ExtensionServices []*v1alpha1.ExtensionService
	Delegations       []*contourv1.TLSCertificateDelegation
	Secrets           []*corev1.Secret
	Services          []*corev1.Service
	EndpointSlices    []*discoveryv1.EndpointSlice

	// The Gateway API (v1beta1 objects are read as their v1 equivalents).
	GatewayClasses []*gwapiv1.GatewayClass
	Gateways       []*gwapiv1.Gateway
	HTTPRoutes     []*gwapiv1.HTTPRoute
	GRPCRoutes     []*gwapiv1.GRPCRoute
	TLSRoutes      []*gwapiv1.TLSRoute
	TCPRoutes      []*gwapiv1.TCPRoute
	UDPRoutes      []*gwapiv1.UDPRoute
	// ListenerSets add listeners to the Gateways that allow them
	// (GEP-1713).
	ListenerSets    []*gwapiv1.ListenerSet
	ReferenceGrants []*gwapiv1.ReferenceGrant
	// BackendTLSPolicies say how Envoy speaks TLS to the Services they
	// target (v1alpha3 objects are read as v1).
	BackendTLSPolicies []*gwapiv1.BackendTLSPolicy
	// ConfigMaps are read for the CA certificates BackendTLSPolicies name
	// (validation.caCertificateRefs).
	ConfigMaps []*corev1.ConfigMap
	// Portcullis's Gateway API policies (gateway.portcullis.dev).
	ExtAuthPolicies []*gatewayv1alpha1.ExtAuthPolicy
	ExtProcPolicies []*gatewayv1alpha1.ExtProcPolicy
	// Namespaces are read for their labels (Gateway listeners'
	// allowedRoutes selectors).
	Namespaces []*corev1.Namespace

	// Extensions are the objects of the kinds the extension servers
	// registered (config extensions[].resources, backendResources,
	// policyResources), as the API server serves them: Portcullis does
	// not interpret them, it hands them to the extension that owns them.
	Extensions []*unstructured.Unstructured

	// Warnings are the strict decoder's complaints about an object read from
	// a file (an unknown or duplicate field), one per field. The builder
	// reports each as an error and does not serve the object: a misspelt
	// restricting field must not be served as if it were absent.
	Warnings map[Ref][]string
}

// Ref names one object.
type Ref struct {
	Kind      string
	Namespace string
	Name      string
}

func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Kinds of the objects that get a status, as in Ref.Kind.
const (
	KindHTTPProxy                = "HTTPProxy"
	KindExtensionService         = "ExtensionService"
	KindTLSCertificateDelegation = "TLSCertificateDelegation"
	KindGatewayClass             = "GatewayClass"
	KindGateway                  = "Gateway"
	KindHTTPRoute                = "HTTPRoute"
	KindGRPCRoute                = "GRPCRoute"
	KindTLSRoute                 = "TLSRoute"
	KindTCPRoute                 = "TCPRoute"
	KindUDPRoute                 = "UDPRoute"
	KindListenerSet              = "ListenerSet"
	KindReferenceGrant           = "ReferenceGrant"
	KindBackendTLSPolicy         = "BackendTLSPolicy"
	KindExtAuthPolicy            = "ExtAuthPolicy"
	KindExtProcPolicy            = "ExtProcPolicy"
)

// The label and annotation of the Services the control plane writes
// (gateway.servicePerGateway): built by the builder, written by the
// statuswriter.
const (
	// GatewayServiceLabel marks them (the writer lists them by it); its
	// value is the Gateway's "namespace.name" cut to a label value.
	GatewayServiceLabel = "gateway.portcullis.dev/gateway"
	// GatewayServiceAnnotation names the Gateway ("namespace/name").
	GatewayServiceAnnotation = "gateway.portcullis.dev/gateway"
)

// Add appends the objects (and parse warnings) of o to s.
func (s *Set) Add(o *Set) {
	s.HTTPProxies = append(s.HTTPProxies, o.HTTPProxies...)
	s.ExtensionServices = append(s.ExtensionServices, o.ExtensionServices...)
	s.Delegations = append(s.Delegations, o.Delegations...)
	s.Secrets = append(s.Secrets, o.Secrets...)
	s.Services = append(s.Services, o.Services...)
	s.EndpointSlices = append(s.EndpointSlices, o.EndpointSlices...)
	s.GatewayClasses = append(s.GatewayClasses, o.GatewayClasses...)
	s.Gateways = append(s.Gateways, o.Gateways...)
	s.HTTPRoutes = append(s.HTTPRoutes, o.HTTPRoutes...)
	s.GRPCRoutes = append(s.GRPCRoutes, o.GRPCRoutes...)
	s.TLSRoutes = append(s.TLSRoutes, o.TLSRoutes...)
	s.TCPRoutes = append(s.TCPRoutes, o.TCPRoutes...)
	s.UDPRoutes = append(s.UDPRoutes, o.UDPRoutes...)
	s.ListenerSets = append(s.ListenerSets, o.ListenerSets...)
	s.ReferenceGrants = append(s.ReferenceGrants, o.ReferenceGrants...)
	s.BackendTLSPolicies = append(s.BackendTLSPolicies, o.BackendTLSPolicies...)
	s.ConfigMaps = append(s.ConfigMaps, o.ConfigMaps...)
	s.ExtAuthPolicies = append(s.ExtAuthPolicies, o.ExtAuthPolicies...)
	s.ExtProcPolicies = append(s.ExtProcPolicies, o.ExtProcPolicies...)
	s.Namespaces = append(s.Namespaces, o.Namespaces...)
	s.Extensions = append(s.Extensions, o.Extensions...)
	for ref, ws := range o.Warnings {
		if s.Warnings == nil {
			s.Warnings = map[Ref][]string{}
		}
		s.Warnings[ref] = append(s.Warnings[ref], ws...)
	}
}

// Sort orders every list by namespace and name, so that everything
// downstream is deterministic whatever order the provider saw objects in.
func (s *Set) Sort() {
	sortObjects(s.HTTPProxies)
	sortObjects(s.ExtensionServices)
	sortObjects(s.Delegations)
	sortObjects(s.Secrets)
	sortObjects(s.Services)
	sortObjects(s.EndpointSlices)
	sortObjects(s.GatewayClasses)
	sortObjects(s.Gateways)
	sortObjects(s.HTTPRoutes)
	sortObjects(s.GRPCRoutes)
	sortObjects(s.TLSRoutes)
	sortObjects(s.TCPRoutes)
	sortObjects(s.UDPRoutes)
	sortObjects(s.ListenerSets)
	sortObjects(s.ReferenceGrants)
	sortObjects(s.BackendTLSPolicies)
	sortObjects(s.ConfigMaps)
	sortObjects(s.ExtAuthPolicies)
	sortObjects(s.ExtProcPolicies)
	sortObjects(s.Namespaces)
	// Several kinds share the list: by group and kind first.
	sort.SliceStable(s.Extensions, func(i, j int) bool {
		a, b := s.Extensions[i].GroupVersionKind(), s.Extensions[j].GroupVersionKind()
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		x, y := s.Extensions[i], s.Extensions[j]
		if x.GetNamespace() != y.GetNamespace() {
			return x.GetNamespace() < y.GetNamespace()
		}
		return x.GetName() < y.GetName()
	})
}

type namespacedName interface {
	GetNamespace() string
	GetName() string
}

func sortObjects[T namespacedName](xs []T) {
	sort.SliceStable(xs, func(i, j int) bool {
		if xs[i].GetNamespace() != xs[j].GetNamespace() {
			return xs[i].GetNamespace() < xs[j].GetNamespace()
		}
		return xs[i].GetName() < xs[j].GetName()
	})
}

// SameVersion reports whether old and cur are the same version of one
// object, status included: the same UID and a non-empty, equal
// resourceVersion, which the API server changes on every write (the file
// provider stamps one derived from the object's text, decode.go). An
// object without a resourceVersion (built by hand) is never the same by
// this test.
func SameVersion(old, cur metav1.Object) bool {
	return old.GetResourceVersion() != "" && old.GetResourceVersion() == cur.GetResourceVersion() && old.GetUID() == cur.GetUID()
}

// SameButStatus reports whether cur is a later version of old that
// differs at most in its status: the same UID, generation (which the API
// server increments on every spec change), labels and annotations. Our own
// status writes come back from the API server as such versions; they
// cannot change a build. Objects without a generation (read from files)
// are never the same by this test.
func SameButStatus(old, cur metav1.Object) bool {
	return old.GetGeneration() != 0 && old.GetGeneration() == cur.GetGeneration() && old.GetUID() == cur.GetUID() &&
		maps.Equal(old.GetLabels(), cur.GetLabels()) && maps.Equal(old.GetAnnotations(), cur.GetAnnotations())
}
