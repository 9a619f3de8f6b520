package objects

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDecodeStampsVersions: an object read from a file gets a
// resourceVersion of its text, which the caches trust (SameVersion): the
// same text gives the same version, any edit another one, and a version
// written in the file is not kept (editing the file would not change it).
func TestDecodeStampsVersions(t *testing.T) {
	const proxy = `apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: default%s}
spec: {virtualhost: {fqdn: %s}}
`
	ext := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	const widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {size: %s}\n"
	version := func(t *testing.T, doc string) string {
		t.Helper()
		var s Set
		if _, err := s.Decode(strings.NewReader(doc), "test", ext); err != nil {
			t.Fatal(err)
		}
		if len(s.HTTPProxies) == 1 {
			return s.HTTPProxies[0].ResourceVersion
		}
		return s.Extensions[0].GetResourceVersion()
	}
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"the same text", fmt.Sprintf(proxy, "", "a.example.com"), fmt.Sprintf(proxy, "", "a.example.com"), true},
		{"an edited spec", fmt.Sprintf(proxy, "", "a.example.com"), fmt.Sprintf(proxy, "", "b.example.com"), false},
		{"an edited spec under a written resourceVersion", fmt.Sprintf(proxy, ", resourceVersion: '5'", "a.example.com"),
			fmt.Sprintf(proxy, ", resourceVersion: '5'", "b.example.com"), false},
		{"an extension's object edited", fmt.Sprintf(widget, "1"), fmt.Sprintf(widget, "2"), false},
		{"an extension's object unchanged", fmt.Sprintf(widget, "1"), fmt.Sprintf(widget, "1"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := version(t, tt.a), version(t, tt.b)
			if a == "" || a == "5" || (a == b) != tt.same {
				t.Errorf("versions %q and %q; want stamped, equal: %v", a, b, tt.same)
			}
		})
	}
}
