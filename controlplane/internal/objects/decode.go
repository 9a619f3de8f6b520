package objects

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/parallel"
)

// Scheme knows every kind the control plane reads.
var Scheme = runtime.NewScheme()

// AddToScheme adds every kind the control plane reads to a scheme (the
// tests' API server clients add them to theirs).
var AddToScheme = schemeBuilder.AddToScheme

var schemeBuilder = runtime.NewSchemeBuilder(
	corev1.AddToScheme, discoveryv1.AddToScheme, contourv1.AddToScheme, v1alpha1.AddToScheme,
	gwapiv1.Install, gwapiv1beta1.Install, gwapiv1alpha3.Install, gatewayv1alpha1.AddToScheme,
)

func init() { utilruntime.Must(AddToScheme(Scheme)) }

var strictCodecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)

// DefaultNamespace is given to namespaced objects that name none, as kubectl
// does.
const DefaultNamespace = "default"

// Skipped is a document that Decode did not use, with the reason.
type Skipped struct {
	Source string // file:document-index
	Kind   string
	Reason string
	// Refused: the document was meant for Portcullis (its group is one of
	// ours) but cannot be read (notRead); translate --strict fails on it.
	Refused bool
}

// Decode adds the objects of a multi-document YAML (or JSON) stream to s.
// Documents of kinds the control plane does not read (Deployments,
// Namespaces, cert-manager objects…) are returned as skipped. An unknown or
// duplicate field does not stop the decoding: the object is kept, and the
// strict decoder's complaint is recorded for its status (an error there:
// the builder does not serve it). A document that cannot be parsed at all is an error naming it.
// Documents are decoded in parallel (tens of thousands of objects take
// seconds to parse) and added in their order.
//
// extensionKinds are the kinds the extension servers registered (config
// ExtensionKinds): their objects go to s.Extensions as they are, unchecked
// (Portcullis does not know their schema), instead of being skipped. Files
// do not say whether a kind is namespaced: a registered object without a
// namespace gets DefaultNamespace, as a namespaced object would.
func (s *Set) Decode(r io.Reader, source string, extensionKinds ...schema.GroupVersionKind) ([]Skipped, error) {
	var docs [][]byte
	reader := k8syaml.NewYAMLReader(bufio.NewReader(r))
	var readErr error
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("%s:%d: %w", source, len(docs)+1, err)
			break
		}
		docs = append(docs, doc)
	}
	var registered map[schema.GroupVersionKind]bool
	if len(extensionKinds) > 0 {
		registered = make(map[schema.GroupVersionKind]bool, len(extensionKinds))
		for _, k := range extensionKinds {
			registered[k] = true
		}
	}
	results := make([]decoded, len(docs))
	parallel.For(len(docs), func(i int) { results[i] = decodeDocument(docs[i], fmt.Sprintf("%s:%d", source, i+1), registered) })
	var skipped []Skipped
	for _, d := range results {
		for _, o := range d.objects {
			s.addDecoded(o)
		}
		skipped = append(skipped, d.skipped...)
		if d.err != nil {
			return skipped, d.err
		}
	}
	return skipped, readErr
}

// decoded is what one document holds (several objects for a List). Its
// objects come before an error found later in the document.
type decoded struct {
	objects []decodedObject
	skipped []Skipped
	err     error
}

type decodedObject struct {
	obj  runtime.Object
	kind string
	// complaints are the strict decoder's, one per unknown or duplicate
	// field, for the object's status.
	complaints []string
}

// decodeDocument decodes one YAML or JSON document. where names it in
// messages; registered are the extensions' kinds.
func decodeDocument(doc []byte, where string, registered map[schema.GroupVersionKind]bool) (out decoded) {
	if len(bytes.TrimSpace(doc)) == 0 || isOnlyComments(doc) {
		return out
	}
	text := doc
	doc, unmarshal := toJSON(doc)
	var meta typeMeta
	if err := unmarshal(doc, &meta); err != nil {
		out.err = explain(err, where, text)
		return out
	}
	if d, incomplete := incompleteTypeMeta(meta, where); incomplete {
		return d
	}
	if meta.Kind == "List" {
		return decodeList(doc, unmarshal, where, registered)
	}
	if gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind); registered[gvk] && !readGVK(gvk) {
		return decodeExtension(doc, where, gvk)
	}
	return decodeRead(doc, where, meta)
}

// typeMeta is a document's apiVersion and kind.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// toJSON converts a YAML document once, so that every later decoding of it
// reads JSON (converting is most of the work). A document the strict
// conversion refuses (a duplicate key) stays YAML, for the deserializer to
// report as a complaint. unmarshal decodes doc as whichever it is.
func toJSON(doc []byte) (out []byte, unmarshal func(b []byte, v any) error) {
	if j, err := yaml.YAMLToJSONStrict(doc); err == nil {
		return j, json.Unmarshal
	}
	return doc, func(b []byte, v any) error { return yaml.Unmarshal(b, v) }
}

// incompleteTypeMeta is the outcome of a document that lacks its
// apiVersion or its kind (incomplete), or of neither.
func incompleteTypeMeta(meta typeMeta, where string) (out decoded, incomplete bool) {
	switch {
	case meta.APIVersion == "" && meta.Kind == "":
		// A configuration file of some server (an auth server's, a
		// processor's) kept beside the resources: not ours to read.
		out.skipped = append(out.skipped, Skipped{Source: where, Kind: "-", Reason: "not a Kubernetes object (no apiVersion or kind)"})
		return out, true
	case meta.Kind == "":
		out.err = fmt.Errorf("%s: apiVersion %q but no kind", where, meta.APIVersion)
		return out, true
	case meta.APIVersion == "":
		out.err = fmt.Errorf("%s: kind %q but no apiVersion", where, meta.Kind)
		return out, true
	}
	return out, false
}

// decodeList decodes the items of a List, each a document of its own,
// until the first error.
func decodeList(doc []byte, unmarshal func(b []byte, v any) error, where string, registered map[schema.GroupVersionKind]bool) (out decoded) {
	var list struct {
		Items []runtime.RawExtension `json:"items"`
	}
	if err := unmarshal(doc, &list); err != nil {
		out.err = fmt.Errorf("%s: %w", where, err)
		return out
	}
	for j, item := range list.Items {
		d := decodeDocument(item.Raw, fmt.Sprintf("%s[%d]", where, j), registered)
		out.objects = append(out.objects, d.objects...)
		out.skipped = append(out.skipped, d.skipped...)
		if d.err != nil {
			out.err = d.err
			return out
		}
	}
	return out
}

// decodeRead decodes an object of a kind the scheme knows, strictly: an
// unknown or duplicate field is a complaint, not an error.
func decodeRead(doc []byte, where string, meta typeMeta) (out decoded) {
	obj, gvk, err := strictCodecs.UniversalDeserializer().Decode(doc, nil, nil)
	var complaints []string
	if strict, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
		for _, e := range strict.Errors() {
			complaints = append(complaints, e.Error())
		}
	} else if err != nil {
		if runtime.IsNotRegisteredError(err) {
			out.skipped = append(out.skipped, notRead(where, meta.APIVersion, meta.Kind))
			return out
		}
		out.err = explain(err, where, doc)
		return out
	}
	if !readKind(obj) {
		out.skipped = append(out.skipped, notRead(where, gvk.GroupVersion().String(), gvk.Kind))
		return out
	}
	if obj.(namespacedName).GetName() == "" {
		// Served as "default/" it would be an object nobody can name in
		// an include, a delegation or a status.
		out.err = fmt.Errorf("%s: %s has no metadata.name: every object needs one (no API server generates names for files, so generateName does not work here)", where, gvk.Kind)
		return out
	}
	crdErrs, err := checkCRD(doc, *gvk)
	if err != nil {
		out.err = fmt.Errorf("%s: %w", where, err)
		return out
	}
	if len(crdErrs) > 0 && !hasStatus(obj) {
		// Nothing would say why it is not served: a note, as for a
		// document not read.
		out.skipped = append(out.skipped, Skipped{Source: where, Kind: gvk.GroupVersion().String() + "/" + gvk.Kind, Refused: true,
			Reason: crdErrs[0]})
		return out
	}
	stampVersion(obj.(metav1.Object), doc)
	out.objects = append(out.objects, decodedObject{obj: obj, kind: gvk.Kind, complaints: append(complaints, crdErrs...)})
	return out
}

// stampVersion sets obj's resourceVersion to a digest of doc, its text:
// files have no API server to count their writes, and the same text
// decodes to the same object, so builder.Memo reuses what it built from
// an object whose text did not change (docs/design/caches.md), even when
// its file did. A resourceVersion written in the file (an object exported
// from a cluster) is replaced: editing the file would not change it.
func stampVersion(obj metav1.Object, doc []byte) {
	sum := sha256.Sum256(doc)
	obj.SetResourceVersion("sha256-" + hex.EncodeToString(sum[:16]))
}

// decodeExtension decodes an object of a kind an extension registered, as
// unstructured: no field is checked but the name.
func decodeExtension(doc []byte, where string, gvk schema.GroupVersionKind) (out decoded) {
	// doc is JSON unless the strict conversion refused it (a duplicate
	// key): the lenient one keeps the last value, as kubectl does.
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		out.err = fmt.Errorf("%s: %w", where, err)
		return out
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		out.err = fmt.Errorf("%s: %s: %w", where, gvk.Kind, err)
		return out
	}
	if u.GetName() == "" {
		out.err = fmt.Errorf("%s: %s has no metadata.name: every object needs one (no API server generates names for files, so generateName does not work here)", where, gvk.Kind)
		return out
	}
	stampVersion(u, doc)
	out.objects = append(out.objects, decodedObject{obj: u, kind: gvk.Kind})
	return out
}

// readGVK reports whether gvk is a kind the control plane reads itself
// (an extension cannot take it over).
func readGVK(gvk schema.GroupVersionKind) bool {
	obj, err := Scheme.New(gvk)
	return err == nil && readKind(obj)
}

// addDecoded files a decoded object in its list, with its complaints.
func (s *Set) addDecoded(o decodedObject) {
	s.add(o.obj)
	if len(o.complaints) > 0 {
		m := o.obj.(namespacedName)
		if s.Warnings == nil {
			s.Warnings = map[Ref][]string{}
		}
		ref := Ref{Kind: o.kind, Namespace: m.GetNamespace(), Name: m.GetName()}
		s.Warnings[ref] = append(s.Warnings[ref], o.complaints...)
	}
}

func isOnlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			return false
		}
	}
	return true
}

// readKind reports whether obj is of a kind the control plane reads.
func readKind(obj runtime.Object) bool {
	switch obj.(type) {
	case *contourv1.HTTPProxy, *v1alpha1.ExtensionService, *contourv1.TLSCertificateDelegation,
		*corev1.Secret, *corev1.ConfigMap, *corev1.Service, *discoveryv1.EndpointSlice, *corev1.Namespace,
		*gwapiv1.GatewayClass, *gwapiv1.Gateway, *gwapiv1.HTTPRoute, *gwapiv1.GRPCRoute, *gwapiv1.ReferenceGrant,
		*gwapiv1.TLSRoute, *gwapiv1.TCPRoute, *gwapiv1.UDPRoute, *gwapiv1.ListenerSet,
		*gwapiv1.BackendTLSPolicy, *gwapiv1alpha3.BackendTLSPolicy,
		*gwapiv1beta1.GatewayClass, *gwapiv1beta1.Gateway, *gwapiv1beta1.HTTPRoute, *gwapiv1beta1.ReferenceGrant,
		*gatewayv1alpha1.ExtAuthPolicy, *gatewayv1alpha1.ExtProcPolicy:
		return true
	}
	return false
}

// add files a decoded object of a kind readKind accepts in its list.
func (s *Set) add(obj runtime.Object) {
	type defaultable interface {
		GetNamespace() string
		SetNamespace(string)
	}
	obj = fromV1beta1(obj)
	if d, ok := obj.(defaultable); ok && d.GetNamespace() == "" && !clusterScoped(obj) {
		d.SetNamespace(DefaultNamespace)
	}
	if !s.addGatewayAPI(obj) {
		s.addOther(obj)
	}
}

// addGatewayAPI files a Gateway API object (v1 or one of the project's
// policies), and reports whether obj was one.
func (s *Set) addGatewayAPI(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *gwapiv1.GatewayClass:
		s.GatewayClasses = append(s.GatewayClasses, o)
	case *gwapiv1.Gateway:
		s.Gateways = append(s.Gateways, o)
	case *gwapiv1.HTTPRoute:
		s.HTTPRoutes = append(s.HTTPRoutes, o)
	case *gwapiv1.GRPCRoute:
		s.GRPCRoutes = append(s.GRPCRoutes, o)
	case *gwapiv1.TLSRoute:
		s.TLSRoutes = append(s.TLSRoutes, o)
	case *gwapiv1.TCPRoute:
		s.TCPRoutes = append(s.TCPRoutes, o)
	case *gwapiv1.UDPRoute:
		s.UDPRoutes = append(s.UDPRoutes, o)
	case *gwapiv1.ListenerSet:
		s.ListenerSets = append(s.ListenerSets, o)
	case *gwapiv1.ReferenceGrant:
		s.ReferenceGrants = append(s.ReferenceGrants, o)
	case *gwapiv1.BackendTLSPolicy:
		s.BackendTLSPolicies = append(s.BackendTLSPolicies, o)
	case *gatewayv1alpha1.ExtAuthPolicy:
		s.ExtAuthPolicies = append(s.ExtAuthPolicies, o)
	case *gatewayv1alpha1.ExtProcPolicy:
		s.ExtProcPolicies = append(s.ExtProcPolicies, o)
	default:
		return false
	}
	return true
}

// addOther files the objects of the other kinds: Contour's, Kubernetes'
// own and the extensions'.
func (s *Set) addOther(obj runtime.Object) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		s.Extensions = append(s.Extensions, o)
	case *contourv1.HTTPProxy:
		s.HTTPProxies = append(s.HTTPProxies, o)
	case *v1alpha1.ExtensionService:
		s.ExtensionServices = append(s.ExtensionServices, o)
	case *contourv1.TLSCertificateDelegation:
		s.Delegations = append(s.Delegations, o)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, o)
	case *corev1.ConfigMap:
		s.ConfigMaps = append(s.ConfigMaps, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *discoveryv1.EndpointSlice:
		s.EndpointSlices = append(s.EndpointSlices, o)
	case *corev1.Namespace:
		s.Namespaces = append(s.Namespaces, o)
	}
}

func clusterScoped(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Namespace, *gwapiv1.GatewayClass:
		return true
	}
	return false
}

// fromV1beta1 returns the v1 equivalent of a Gateway API v1beta1 object
// (whose spec and status types are the v1 ones), or of a v1alpha3
// BackendTLSPolicy (the v1 type under another name), and other objects as
// they are.
func fromV1beta1(obj runtime.Object) runtime.Object {
	v1 := gwapiv1.GroupVersion.String()
	switch o := obj.(type) {
	case *gwapiv1beta1.GatewayClass:
		return &gwapiv1.GatewayClass{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: o.Kind}, ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}
	case *gwapiv1beta1.Gateway:
		return &gwapiv1.Gateway{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: o.Kind}, ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}
	case *gwapiv1beta1.HTTPRoute:
		return &gwapiv1.HTTPRoute{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: o.Kind}, ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}
	case *gwapiv1beta1.ReferenceGrant:
		return &gwapiv1.ReferenceGrant{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: o.Kind}, ObjectMeta: o.ObjectMeta, Spec: o.Spec}
	case *gwapiv1alpha3.BackendTLSPolicy:
		return &gwapiv1.BackendTLSPolicy{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: o.Kind}, ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}
	}
	return obj
}
