package objects

import (
	"strings"
	"testing"
)

// TestDecodeErrorsInTheUsersTerms: a tab says "tab" and its line, once; a
// value of the wrong type names the field path and the type expected, at
// several depths, and none says Go's words.
func TestDecodeErrorsInTheUsersTerms(t *testing.T) {
	const head = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: a\n  namespace: ns\n"
	tests := []struct {
		name, doc string
		want      string
	}{
		{"a tab in the indentation", head + "spec:\n  virtualhost:\n\tfqdn: a.example.com\n",
			"in.yaml, document 1, line 8: a tab indents this line: YAML indents with spaces only"},
		{"a tab after spaces", head + "spec:\n  virtualhost:\n   \tfqdn: a.example.com\n",
			"in.yaml, document 1, line 8: a tab indents this line"},
		{"a tab in the second document", "---\n" + head + "spec: {}\n---\n" + head + "spec:\n\troutes: []\n",
			"in.yaml, document 2, line 7: a tab indents this line"},
		{"a string for an integer, three levels down", head + "spec:\n  routes:\n  - services:\n    - name: s\n      port: eighty\n",
			"in.yaml, document 1: spec.routes.services.port: expected an integer, got a string"},
		{"a list for a map", head + "spec:\n  virtualhost:\n  - fqdn: a.example.com\n",
			"in.yaml, document 1: spec.virtualhost: expected a map (VirtualHost), got a list"},
		{"a map for a list", head + "spec:\n  routes:\n    services: {}\n",
			"in.yaml, document 1: spec.routes: expected a list, got a map"},
		{"a string for a boolean", head + "spec:\n  virtualhost:\n    fqdn: a.example.com\n    tls:\n      passthrough: \"yes\"\n",
			"in.yaml, document 1: spec.virtualhost.tls.passthrough: expected true or false, got a string"},
		{"a number for a string at the top", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: 7\n",
			"in.yaml, document 1: metadata.name: expected a string, got a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Set{}).Decode(strings.NewReader(tt.doc), "in.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			for _, goWords := range []string{"Go struct", "cannot unmarshal", "converting YAML to JSON", "found character"} {
				if strings.Contains(err.Error(), goWords) {
					t.Errorf("error %q says %q", err, goWords)
				}
			}
		})
	}
}
