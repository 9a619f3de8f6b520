package builder

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Resolver answers the lookups of one root's build in the snapshot and
// records each (what it returned, nil for "not found"): a root's result
// is a function of the root and of what it read, so the record is what
// tells a Memo whether the result still holds. The global inputs (options,
// ExtensionServices, delegations, global authorization and processing) are
// not recorded: the Memo compares them as a whole.
type Resolver struct {
	snap *snapshot
	// reads is nil for the global stage: nothing to record.
	reads *reads
}

// reads are the objects one root looked up.
type reads struct {
	proxies  []dep[*contourv1.HTTPProxy]
	services []dep[*corev1.Service]
	slices   []dep[[]*discoveryv1.EndpointSlice]
	secrets  []dep[*corev1.Secret]
	// warnings are the parse warnings of the objects it has findings on.
	warnings []warningDep
	// extObjects are the objects of the extensions' kinds it read.
	extObjects []dep2[extKey, *unstructured.Unstructured]
}

// dep2 is one lookup by another key than a namespaced name.
type dep2[K comparable, T any] struct {
	key K
	got T
}

// dep is one lookup: its key and what it returned.
type dep[T any] struct {
	key types.NamespacedName
	got T
}

type warningDep struct {
	ref objects.Ref
	got []string
}

func (r *Resolver) proxy(k types.NamespacedName) *contourv1.HTTPProxy {
	p := r.snap.proxies[k]
	if r.reads != nil {
		r.reads.proxies = append(r.reads.proxies, dep[*contourv1.HTTPProxy]{k, p})
	}
	return p
}

func (r *Resolver) service(k types.NamespacedName) *corev1.Service {
	s := r.snap.services[k]
	if r.reads != nil {
		r.reads.services = append(r.reads.services, dep[*corev1.Service]{k, s})
	}
	return s
}

func (r *Resolver) endpointSlices(k types.NamespacedName) []*discoveryv1.EndpointSlice {
	s := r.snap.slices[k]
	if r.reads != nil {
		r.reads.slices = append(r.reads.slices, dep[[]*discoveryv1.EndpointSlice]{k, s})
	}
	return s
}

func (r *Resolver) secret(k types.NamespacedName) *corev1.Secret {
	s := r.snap.secrets[k]
	if r.reads != nil {
		r.reads.secrets = append(r.reads.secrets, dep[*corev1.Secret]{k, s})
	}
	return s
}

// extensionObject finds an object of an extension's kind.
func (r *Resolver) extensionObject(k extKey) *unstructured.Unstructured {
	u := r.snap.extObjects[k]
	if r.reads != nil {
		r.reads.extObjects = append(r.reads.extObjects, dep2[extKey, *unstructured.Unstructured]{k, u})
	}
	return u
}

// warnings returns the strict decoder's complaints about an object.
func (r *Resolver) warnings(ref objects.Ref) []string {
	ws := r.snap.in.Warnings[ref]
	if r.reads != nil {
		r.reads.warnings = append(r.reads.warnings, warningDep{ref, ws})
	}
	return ws
}

// The global inputs.

func (r *Resolver) opts() *Options { return &r.snap.opts }

func (r *Resolver) global() *globals { return &r.snap.global }

func (r *Resolver) delegated(secret types.NamespacedName, namespace string) bool {
	return r.snap.delegated(secret, namespace)
}

// extension finds a valid ExtensionService; otherwise it says why not
// (reason and message).
func (r *Resolver) extension(namespace, name string) (ext *extension, reason, message string) {
	e, ok := r.snap.extensions[nn(namespace, name)]
	if !ok {
		return nil, status.ReasonExtensionServiceNotFound, fmt.Sprintf("ExtensionService %q not found", namespace+"/"+name)
	}
	if e.cluster == nil {
		return nil, status.ReasonExtensionServiceInvalid, fmt.Sprintf("ExtensionService %q is invalid: %s", namespace+"/"+name, status.Summary(e.status))
	}
	return e, "", ""
}
