package objects

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// Scheme knows every kind the control plane reads.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(discoveryv1.AddToScheme(Scheme))
	utilruntime.Must(contourv1.AddToScheme(Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(Scheme))
}

var strictCodecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)

// DefaultNamespace is given to namespaced objects that name none, as kubectl
// does.
const DefaultNamespace = "default"

// Skipped is a document that Decode did not use, with the reason.
type Skipped struct {
	Source string // file:document-index
	Kind   string
	Reason string
}

// Decode adds the objects of a multi-document YAML (or JSON) stream to s.
// Documents of kinds the control plane does not read (Deployments,
// Namespaces, cert-manager objects…) are returned as skipped. Unknown fields
// are not fatal: the object is kept and a warning is recorded for its
// status. A document that cannot be parsed at all is an error naming it.
func (s *Set) Decode(r io.Reader, source string) ([]Skipped, error) {
	var skipped []Skipped
	reader := k8syaml.NewYAMLReader(bufio.NewReader(r))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return skipped, nil
		}
		where := fmt.Sprintf("%s:%d", source, i+1)
		if err != nil {
			return skipped, fmt.Errorf("%s: %w", where, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isOnlyComments(doc) {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return skipped, fmt.Errorf("%s: %w", where, err)
		}
		if meta.Kind == "List" {
			var list struct {
				Items []runtime.RawExtension `json:"items"`
			}
			if err := yaml.Unmarshal(doc, &list); err != nil {
				return skipped, fmt.Errorf("%s: %w", where, err)
			}
			for j, item := range list.Items {
				sk, err := s.Decode(bytes.NewReader(item.Raw), fmt.Sprintf("%s[%d]", where, j))
				skipped = append(skipped, sk...)
				if err != nil {
					return skipped, err
				}
			}
			continue
		}
		obj, gvk, err := strictCodecs.UniversalDeserializer().Decode(doc, nil, nil)
		var warning string
		if err != nil && runtime.IsStrictDecodingError(err) && obj != nil {
			warning = err.Error()
		} else if err != nil {
			if runtime.IsNotRegisteredError(err) {
				skipped = append(skipped, Skipped{Source: where, Kind: meta.APIVersion + "/" + meta.Kind, Reason: "kind not read by portcullis"})
				continue
			}
			return skipped, fmt.Errorf("%s: %w", where, err)
		}
		if !s.add(obj) {
			skipped = append(skipped, Skipped{Source: where, Kind: gvk.GroupVersion().String() + "/" + gvk.Kind, Reason: "kind not read by portcullis"})
			continue
		}
		if warning != "" {
			m := obj.(namespacedName)
			if s.Warnings == nil {
				s.Warnings = map[Ref][]string{}
			}
			ref := Ref{Kind: gvk.Kind, Namespace: m.GetNamespace(), Name: m.GetName()}
			s.Warnings[ref] = append(s.Warnings[ref], strings.TrimPrefix(warning, "strict decoding error: "))
		}
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

// add files a decoded object in its list; false for kinds not read.
func (s *Set) add(obj runtime.Object) bool {
	type defaultable interface {
		GetNamespace() string
		SetNamespace(string)
	}
	if d, ok := obj.(defaultable); ok && d.GetNamespace() == "" {
		d.SetNamespace(DefaultNamespace)
	}
	switch o := obj.(type) {
	case *contourv1.HTTPProxy:
		s.HTTPProxies = append(s.HTTPProxies, o)
	case *v1alpha1.ExtensionService:
		s.ExtensionServices = append(s.ExtensionServices, o)
	case *contourv1.TLSCertificateDelegation:
		s.Delegations = append(s.Delegations, o)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *discoveryv1.EndpointSlice:
		s.EndpointSlices = append(s.EndpointSlices, o)
	default:
		return false
	}
	return true
}
