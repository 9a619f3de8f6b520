package status

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The reasons table of docs/status.md lists every reason of reasons.go
// (those of the projectcontour.io kinds), and nothing else: the table
// says which reasons are Contour's, so a reason added here must be added
// there, saying whose it is.
func TestReasonsTableIsComplete(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Gateway API reasons, documented with the Gateway API's.
	gatewayAPI := map[string]bool{ReasonGatewayClassNotAccepted: true, ReasonOverriddenByPolicy: true, ReasonCRDValidationFailed: true}
	want := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Reason") {
				continue
			}
			v, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			if !gatewayAPI[v] {
				want[v] = true
			}
		}
		return true
	})
	doc, err := os.ReadFile("../../../docs/status.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Reasons\n")
	if !ok {
		t.Fatal("docs/status.md has no Reasons section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| .* \\| (Contour|\\*\\*ours\\*\\*) \\|$")
	got := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got[m[1]] = true
		if !want[m[1]] {
			t.Errorf("docs/status.md lists the reason %s, which reasons.go does not have", m[1])
		}
	}
	if len(got) < len(want)/2 {
		t.Fatalf("only %d rows read from docs/status.md's table: has its shape changed?", len(got))
	}
	for r := range want {
		if !got[r] {
			t.Errorf("docs/status.md does not list the reason %s (say whether it is Contour's or ours)", r)
		}
	}
}
