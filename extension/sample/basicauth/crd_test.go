package basicauth_test

import (
	"os"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/extension/sample/basicauth"
)

// The CRD names the kind the extension decodes. (Its schema is checked by
// hand against the API server's CRD validation; this module does not
// depend on apiextensions.)
func TestCRDNamesTheKind(t *testing.T) {
	b, err := os.ReadFile("crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"name: basicauthfilters." + basicauth.Group,
		"group: " + basicauth.Group,
		"kind: " + basicauth.Kind,
		"- name: " + basicauth.Version,
		"scope: Namespaced",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("crd.yaml does not say %q", want)
		}
	}
}
