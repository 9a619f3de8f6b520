package builder

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every reason the builder writes is a constant of internal/status
// (reasons.go), so the reasons a user can see are listed in one place: no
// call here passes a CamelCase string literal (a reason written inline).
func TestNoInlineReasons(t *testing.T) {
	// This package, the front doors and the core.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(more) < 50 {
		t.Fatalf("only %d files in the builder's packages: the glob no longer finds them", len(more))
	}
	camel := regexp.MustCompile(`^"[A-Z][a-z]+[A-Z][A-Za-z]*"$`)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			var args []ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr:
				args = n.Args
			case *ast.ReturnStmt:
				args = n.Results
			default:
				return true
			}
			for _, a := range args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING && camel.MatchString(lit.Value) {
					t.Errorf("%s: reason %s written inline: add it to internal/status/reasons.go", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	}
}
