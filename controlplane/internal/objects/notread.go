package objects

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// ownGroups are the API groups whose every document is meant for
// Portcullis (Contour's, the Gateway API's and its own): one it does not
// read (a misspelt kind, a version it does not read) is refused, not
// merely skipped as a Deployment is, since what it asked for would be
// missing without a word.
var ownGroups = []string{contourv1.GroupName, gwapiv1.GroupName, gatewayv1alpha1.GroupVersion.Group}

// readVersions are, by group and kind, the versions read of the kinds of
// ownGroups, the most stable first (once the scheme is filled, in init).
var readVersions = sync.OnceValue(func() map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for gvk := range Scheme.AllKnownTypes() {
		if !slices.Contains(ownGroups, gvk.Group) || !readGVK(gvk) {
			continue
		}
		if out[gvk.Group] == nil {
			out[gvk.Group] = map[string][]string{}
		}
		out[gvk.Group][gvk.Kind] = append(out[gvk.Group][gvk.Kind], gvk.Version)
	}
	for _, kinds := range out {
		for _, vs := range kinds {
			sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		}
	}
	return out
})

// notRead is a document of a kind the control plane does not read:
// skipped, and refused when its group is one of ownGroups, with a reason
// that says what to write instead.
func notRead(where, apiVersion, kind string) Skipped {
	s := Skipped{Source: where, Kind: apiVersion + "/" + kind, Reason: "kind not read by portcullis"}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || !slices.Contains(ownGroups, gv.Group) {
		return s
	}
	s.Refused = true
	kinds := readVersions()[gv.Group]
	if vs, ok := kinds[kind]; ok {
		s.Reason = fmt.Sprintf("%s %s is not read: write it as %s/%s (versions read: %s)", gv.Version, kind, gv.Group, vs[0], strings.Join(vs, ", "))
		return s
	}
	for k, vs := range kinds {
		if strings.EqualFold(k, kind) {
			s.Reason = fmt.Sprintf("%s has no kind %q: kinds are case-sensitive, did you mean %s (%s/%s)?", gv.Group, kind, k, gv.Group, vs[0])
			return s
		}
	}
	s.Reason = fmt.Sprintf("kind %s of %s is not read by portcullis: what it asks for is not served", kind, gv.Group)
	return s
}
