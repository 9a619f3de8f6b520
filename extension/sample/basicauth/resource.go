package basicauth

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// The registered kind: examples.portcullis.dev/v1alpha1 BasicAuthFilter,
// namespaced (crd.yaml).
const (
	Group   = "examples.portcullis.dev"
	Version = "v1alpha1"
	Kind    = "BasicAuthFilter"
)

// Context keys the htpasswd auth server reads (authserver/internal/htpasswd;
// docs/authserver-htpasswd.md). Keys under HtpasswdKeyPrefix are its
// settings; an unknown one makes it fail closed with 500, so a
// BasicAuthFilter may not set them through spec.context.
const (
	HtpasswdKeyPrefix = "htpasswd.portcullis.dev/" //nolint:gosec // G101: a context key prefix named after the htpasswd server, no credential; renaming the exported name would break users
	RealmKey          = HtpasswdKeyPrefix + "realm"
)

// Context keys this extension adds to every check, naming where the check
// comes from. The htpasswd server forwards keys outside its prefix to the
// upstream as Auth-Context-<Key> headers (Auth-Context-Route,
// Auth-Context-Basicauth-Filter). spec.context may not set them.
const (
	RouteKey  = "route"            // "<kind>/<namespace>/<name>" of the HTTPRoute or HTTPProxy
	FilterKey = "basicauth-filter" // "<namespace>/<name>" of the BasicAuthFilter
)

// Filter is the Go type of the BasicAuthFilter CRD (crd.yaml).
type Filter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              FilterSpec `json:"spec"`
	// Status is accepted (the API server serves it) and ignored.
	Status map[string]any `json:"status,omitempty"`
}

// FilterSpec is what a BasicAuthFilter asks for.
type FilterSpec struct {
	// Realm is the realm of the check: it selects the users (htpasswd
	// Secrets annotated with this realm, plus users of every realm) and is
	// shown in the challenge, WWW-Authenticate: Basic realm="<realm>".
	// Empty: the auth server's --auth-realm.
	Realm string `json:"realm,omitempty"`
	// Disabled turns authentication off on the routes that reference the
	// filter, without removing the reference.
	Disabled bool `json:"disabled,omitempty"`
	// Context are extra context extensions sent with every check; the
	// htpasswd server forwards them upstream as Auth-Context-<Key>
	// headers.
	Context map[string]string `json:"context,omitempty"`
}

// ref is "<namespace>/<name>" of the filter.
func (f *Filter) ref() string { return f.Namespace + "/" + f.Name }

// decode reads one extension resource as a BasicAuthFilter and checks it.
// Its error names the resource, and says what is wrong.
func decode(r *v1alpha1.ExtensionResource) (*Filter, error) {
	u, err := sdk.Unstructured(r)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	if gvk := u.GroupVersionKind(); gvk.Group != Group || gvk.Version != Version || gvk.Kind != Kind {
		return nil, fmt.Errorf("%s: not a %s/%s %s (is the extension registered with other resources?)", name, Group, Version, Kind)
	}
	f, err := sdk.DecodeAs[Filter](r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Spec.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// validate checks the spec with the htpasswd server's own rules, so that
// what it would refuse at request time (a 500 for every request) is
// refused here instead, on the route's status.
func (s *FilterSpec) validate() error {
	if s.Realm != "" {
		if err := validRealm(s.Realm); err != nil {
			return fmt.Errorf("spec.realm: %w", err)
		}
	}
	keys := make([]string, 0, len(s.Context))
	for k := range s.Context {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key, the same one every time
	for _, k := range keys {
		switch {
		case k == "":
			return fmt.Errorf("spec.context: empty key")
		case strings.HasPrefix(k, HtpasswdKeyPrefix):
			return fmt.Errorf("spec.context[%q]: keys under %s are the auth server's settings (set the realm with spec.realm)", k, HtpasswdKeyPrefix)
		case k == RouteKey || k == FilterKey:
			return fmt.Errorf("spec.context[%q]: reserved, the extension sets it", k)
		case !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl):
			return fmt.Errorf("spec.context[%q]: the key has a control character or is not UTF-8", k)
		case !utf8.ValidString(s.Context[k]) || strings.ContainsFunc(s.Context[k], unicode.IsControl):
			return fmt.Errorf("spec.context[%q]: the value has a control character or is not UTF-8", k)
		}
	}
	return nil
}

// validRealm is the htpasswd server's rule (htpasswd.ValidRealm): 1 to 256
// bytes of UTF-8 without control characters, '"' or '\'; "*" is reserved.
func validRealm(realm string) error {
	switch {
	case realm == "*":
		return fmt.Errorf(`"*" is not a realm (on a Secret it means every realm)`)
	case len(realm) > 256:
		return fmt.Errorf("longer than 256 bytes")
	case !utf8.ValidString(realm):
		return fmt.Errorf("not UTF-8")
	case strings.ContainsFunc(realm, func(r rune) bool { return unicode.IsControl(r) || r == '"' || r == '\\' }):
		return fmt.Errorf(`contains a control character, '"' or '\'`)
	}
	return nil
}
