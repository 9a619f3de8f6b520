package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/e2e/harness"
)

// modulePrefix is the common prefix of this repository's Go module paths:
// `github.com/portcullis/portcullis/controlplane/internal/builder` names the
// folder controlplane/internal/builder.
const modulePrefix = "github.com/portcullis/portcullis/"

// moduleDirs are the Go modules of go.work; the READMEs under them are docs.
var moduleDirs = []string{"apis", "serverkit", "controlplane", "authserver", "extprocserver", "extension", "e2e"}

// skippedDirs are never indexed: not part of a checkout (.git, the tools that
// hack/install-tools.sh installs, what make builds) or not ours.
var skippedDirs = map[string]bool{".git": true, ".tools": true, "node_modules": true, "bin": true}

// foreignPackages are package names a doc may write that are not ours even
// when a package of ours has the same name: the standard library's and the
// usual aliases of Kubernetes, Envoy and gRPC packages.
var foreignPackages = map[string]bool{
	"bytes": true, "context": true, "errors": true, "exec": true, "filepath": true,
	"fmt": true, "http": true, "io": true, "json": true, "log": true, "net": true,
	"os": true, "path": true, "slog": true, "strings": true, "sync": true,
	"testing": true, "time": true, "tls": true, "url": true, "x509": true,
	"yaml": true, "grpc": true, "proto": true, "metav1": true, "corev1": true,
	"main": true,
}

// repoIndex is what exists in the repository.
type repoIndex struct {
	root     string
	paths    map[string]bool // files and folders, slash-separated, relative to root
	suffixes map[string]bool // every trailing part of every file path ("builder/proxy.go", "proxy.go")
	topLevel map[string]bool // first path elements ("controlplane", "docs", "Makefile")
	decls    map[string]map[string]bool
	// decls[package name] holds Name for every top-level func, type, const
	// and var, and Type.Name for every method, struct field and interface
	// method, of every package of that name.
	methods map[string]bool // Type.Method in any package
}

func indexRepo(t *testing.T, root string) *repoIndex {
	t.Helper()
	idx := &repoIndex{
		root: root, paths: map[string]bool{}, suffixes: map[string]bool{},
		topLevel: map[string]bool{}, decls: map[string]map[string]bool{}, methods: map[string]bool{},
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() && skippedDirs[d.Name()] {
			return filepath.SkipDir
		}
		idx.paths[rel] = true
		idx.topLevel[strings.SplitN(rel, "/", 2)[0]] = true
		if d.IsDir() {
			return nil
		}
		for s := rel; ; {
			idx.suffixes[s] = true
			i := strings.Index(s, "/")
			if i < 0 {
				break
			}
			s = s[i+1:]
		}
		if strings.HasSuffix(rel, ".go") {
			return idx.addGoFile(fset, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("indexing the repository: %v", err)
	}
	return idx
}

func (idx *repoIndex) addGoFile(fset *token.FileSet, p string) error {
	f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", p, err)
	}
	names := idx.decls[f.Name.Name]
	if names == nil {
		names = map[string]bool{}
		idx.decls[f.Name.Name] = names
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				names[d.Name.Name] = true
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); recv != "" {
				names[recv+"."+d.Name.Name] = true
				idx.methods[recv+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			addGenDecl(names, d)
		}
	}
	return nil
}

func addGenDecl(names map[string]bool, d *ast.GenDecl) {
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.ValueSpec:
			for _, n := range s.Names {
				names[n.Name] = true
			}
		case *ast.TypeSpec:
			names[s.Name.Name] = true
			var fields *ast.FieldList
			switch ty := s.Type.(type) {
			case *ast.StructType:
				fields = ty.Fields
			case *ast.InterfaceType:
				fields = ty.Methods
			}
			if fields == nil {
				continue
			}
			for _, field := range fields.List {
				for _, n := range field.Names {
					names[s.Name.Name+"."+n.Name] = true
				}
				if len(field.Names) == 0 { // embedded: promoted by its type name
					if n := receiverName(field.Type); n != "" {
						names[s.Name.Name+"."+n] = true
					}
				}
			}
		}
	}
}

// receiverName is T for T, *T, T[K] and pkg.T.
func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// docFiles are the Markdown files whose references are checked: docs/**,
// the top-level README.md and CONTRIBUTING.md, and the READMEs under the Go
// modules and examples. CHANGELOG.md is history: it names what is gone.
func (idx *repoIndex) docFiles() []string {
	var docs []string
	for p := range idx.paths {
		base := path.Base(p)
		switch {
		case !strings.HasSuffix(p, ".md") || strings.Contains("/"+p+"/", "/testdata/"):
		case strings.HasPrefix(p, "docs/"), p == "README.md", p == "CONTRIBUTING.md":
			docs = append(docs, p)
		case base == "README.md" && (inModule(p) || strings.HasPrefix(p, "examples/")):
			docs = append(docs, p)
		}
	}
	sort.Strings(docs)
	return docs
}

func inModule(p string) bool {
	for _, m := range moduleDirs {
		if strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

var (
	codeSpanRE = regexp.MustCompile("`+([^`]+)`+")
	linkRE     = regexp.MustCompile(`\]\(\s*<?([^()\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLinkRE  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// methodRE is (*Type).Method, (Type).Method and (*pkg.Type).Method.
	methodRE = regexp.MustCompile(`\(\*?(?:([a-z][a-z0-9]*)\.)?([A-Za-z_]\w*)\)\.([A-Za-z_]\w*)`)
	// identRE is pkg.Name and pkg.Type.Name, not inside a longer dotted
	// name or a path (the character before it is checked by the caller).
	identRE = regexp.MustCompile(`([a-z][a-z0-9]*)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?`)
	fenceRE = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
)

// problem is one stale reference, reported as file:line.
type problem struct {
	file string
	line int
	msg  string
}

type checker struct {
	idx      *repoIndex
	file     string
	line     int
	text     string // the line
	problems []problem
}

func (c *checker) reportf(format string, args ...any) {
	c.problems = append(c.problems, problem{c.file, c.line, fmt.Sprintf(format, args...)})
}

func (c *checker) checkFile(text string) {
	fence := ""
	goFence := false
	for i, line := range strings.Split(text, "\n") {
		c.line, c.text = i+1, line
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence, goFence = m[1][:1], m[2] == "go"
				continue
			case strings.HasPrefix(m[1], fence) && m[2] == "":
				fence = ""
				continue
			}
		}
		if fence != "" {
			c.checkCode(line, goFence)
			continue
		}
		for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
			c.checkCode(m[1], true)
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			c.checkLink(m[1])
		}
		if m := refLinkRE.FindStringSubmatch(line); m != nil {
			c.checkLink(m[1])
		}
	}
}

// checkLink checks the file part of a relative link.
func (c *checker) checkLink(target string) {
	if i := strings.IndexAny(target, "#?"); i >= 0 {
		target = target[:i]
	}
	if target == "" || strings.Contains(target, ":") {
		return // an anchor in this file, or a URL (http:, mailto:)
	}
	p := path.Join(path.Dir(c.file), target)
	if strings.HasPrefix(target, "/") {
		p = strings.TrimPrefix(path.Clean(target), "/")
	}
	if !c.idx.paths[p] && p != "." {
		c.reportf("link %q: %s does not exist", target, p)
	}
}

// checkCode checks code (a code span, or a line of a code block): the
// repository paths and Go files it names, and, when idents, the Go
// identifiers of our packages.
func (c *checker) checkCode(code string, idents bool) {
	if strings.Contains(code, "://") {
		return
	}
	for _, tok := range strings.Fields(code) {
		c.checkPathToken(tok)
	}
	if !idents {
		return
	}
	for _, m := range methodRE.FindAllStringSubmatchIndex(code, -1) {
		c.checkMethod(code, m)
	}
	for _, m := range identRE.FindAllStringSubmatchIndex(code, -1) {
		c.checkIdent(code, m)
	}
}

// checkPathToken checks one word of code that may be a path: one whose first
// element is a top-level file or folder of the repository must exist; a
// file.go, or a path ending in one, must be the tail of some file's path. A
// README's paths may also be relative to its folder (extension/README.md's
// `hack/protogen`).
func (c *checker) checkPathToken(tok string) {
	tok, ok := cleanPathToken(tok)
	if !ok {
		return
	}
	first := strings.SplitN(tok, "/", 2)[0]
	local := path.Join(path.Dir(c.file), tok)
	switch {
	case strings.HasPrefix(tok, "/") || c.idx.paths[local]:
	case strings.Contains(tok, "/") && c.idx.topLevel[first]:
		if !c.idx.paths[path.Clean(tok)] && !c.extensionCluster(tok) {
			c.reportf("path %s does not exist", tok)
		}
	case strings.HasSuffix(tok, ".go"):
		if !c.idx.suffixes[tok] {
			c.reportf("Go file %s: no file of the repository has that name", tok)
		}
	}
}

// extensionCluster reports whether p is the name of an ExtensionService's
// Envoy cluster, extension/NAMESPACE/NAME, rather than a path under the
// extension module: extension/NAMESPACE is not a folder.
func (c *checker) extensionCluster(p string) bool {
	parts := strings.Split(p, "/")
	return len(parts) == 3 && parts[0] == "extension" && !c.idx.paths[parts[0]+"/"+parts[1]]
}

var pathTrim = strings.NewReplacer("`", "", "\"", "", "'", "", "(", "", ")", "", ",", "", ";", "")

// cleanPathToken turns a word of code into the path it may name, or reports
// that it names none: a label (`authserver/oidc:`), a pattern or a template.
func cleanPathToken(tok string) (string, bool) {
	tok = pathTrim.Replace(tok)
	if i := strings.LastIndex(tok, "="); i >= 0 {
		tok = tok[i+1:] // --flag=path, VAR=path
	}
	if i := strings.Index(tok, ".go:"); i >= 0 {
		tok = tok[:i+3] // file.go:123
	}
	if strings.HasSuffix(tok, ":") {
		return "", false // a label: a commit's area, a YAML key
	}
	tok = strings.TrimPrefix(tok, modulePrefix)
	tok = strings.TrimPrefix(tok, "./")
	if i := strings.Index(tok, "#"); i >= 0 {
		tok = tok[:i]
	}
	tok = strings.TrimSuffix(strings.TrimSuffix(tok, "/..."), "/")
	tok = strings.TrimRight(tok, ".")
	if tok == "" || strings.Contains(tok, "...") || strings.ContainsAny(tok, "*<>{}$[]|@%\\") {
		return "", false
	}
	return tok, true
}

// continuesName reports whether the match at [start, end) of code is part of
// a longer name, a path or a file name: `envoy.filters.http.Router`,
// `a/builder.Foo`, `config.yaml`.
func continuesName(code string, start, end int) bool {
	if start > 0 && strings.ContainsRune("./-_:$", rune(code[start-1])) {
		return true
	}
	if start > 0 && isWordByte(code[start-1]) {
		return true
	}
	return end < len(code) && (isWordByte(code[end]) || strings.ContainsRune("/-", rune(code[end])) ||
		(code[end] == '.' && end+1 < len(code) && isWordByte(code[end+1])))
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// ours reports whether pkg is one of our package names that a doc may be
// naming.
func (c *checker) ours(pkg string) bool {
	return c.idx.decls[pkg] != nil && !foreignPackages[pkg]
}

func (c *checker) checkMethod(code string, m []int) {
	typ, method := code[m[4]:m[5]], code[m[6]:m[7]]
	if m[2] >= 0 {
		pkg := code[m[2]:m[3]]
		if !c.ours(pkg) {
			return
		}
		if !c.idx.decls[pkg][typ+"."+method] {
			c.reportf("%s: package %s has no method %s.%s", code[m[0]:m[1]], pkg, typ, method)
		}
		return
	}
	if !c.idx.methods[typ+"."+method] {
		c.reportf("%s: no type %s of the repository has a method %s", code[m[0]:m[1]], typ, method)
	}
}

func (c *checker) checkIdent(code string, m []int) {
	pkg, name := code[m[2]:m[3]], code[m[4]:m[5]]
	if !c.ours(pkg) || continuesName(code, m[0], m[1]) {
		return
	}
	if before := code[:m[0]]; (strings.HasSuffix(before, "(") || strings.HasSuffix(before, "(*")) && strings.HasPrefix(code[m[1]:], ").") {
		return // (*pkg.Type).Method: checkMethod's
	}
	// Only exported names: `status.podIP`, `authserver.oidcSecret` and
	// `config.yaml` are Kubernetes fields, Helm values and files.
	if name[0] < 'A' || name[0] > 'Z' {
		return
	}
	// gRPC's status package, as in status.Error(codes.InvalidArgument, ...).
	if pkg == "status" && strings.Contains(c.text, "codes.") {
		return
	}
	names := c.idx.decls[pkg]
	if !names[name] {
		c.reportf("%s: package %s declares no %s", code[m[0]:m[1]], pkg, name)
		return
	}
	if m[6] >= 0 {
		if sub := code[m[6]:m[7]]; !names[name+"."+sub] {
			c.reportf("%s: %s.%s has no method or field %s", code[m[0]:m[1]], pkg, name, sub)
		}
	}
}

// TestDocsNameWhatExists fails when a doc names a repository path, a Go file
// or a Go identifier of one of our packages that does not exist.
func TestDocsNameWhatExists(t *testing.T) {
	idx := indexRepo(t, harness.RepoRoot(t))
	docs := idx.docFiles()
	if len(docs) < 10 {
		t.Fatalf("found only %d docs under %s: %v", len(docs), idx.root, docs)
	}
	var problems []problem
	for _, doc := range docs {
		text, err := os.ReadFile(filepath.Join(idx.root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		c := &checker{idx: idx, file: doc}
		c.checkFile(string(text))
		problems = append(problems, c.problems...)
	}
	if len(problems) == 0 {
		return
	}
	var b strings.Builder
	for _, p := range problems {
		fmt.Fprintf(&b, "\n%s:%d: %s", p.file, p.line, p.msg)
	}
	t.Errorf("%d stale references in the docs (fix the docs, not this test):%s", len(problems), b.String())
}

// TestCheckerFindsStaleReferences keeps TestDocsNameWhatExists honest: on
// lines written for it, against the real repository, it reports what is
// gone and only that.
func TestCheckerFindsStaleReferences(t *testing.T) {
	idx := indexRepo(t, harness.RepoRoot(t))
	for _, tc := range []struct {
		line  string
		stale int
	}{
		// Gone.
		{"`controlplane/internal/builder/nosuchfile.go`", 1},
		{"see [the guide](nosuchpage.md#section)", 1},
		{"[x]: ../nosuchfolder/", 1},
		{"`builder/nosuchfile.go` (`hostAuthScope`)", 1},
		{"`nosuchfile.go`", 1},
		{"`harness.NoSuchFunction(t)`", 1},
		{"`builder.NoSuchConstant`", 1},
		{"`(*extension.Runner).NoSuchMethod`", 1},
		{"`(*Runner).NoSuchMethod`", 1},
		{"`extension.Runner.NoSuchMethod`", 1},
		{"`make -C hack/tools/nosuchtool`", 1},
		// There.
		{"`controlplane/internal/builder/core/extauth.go`, `hack/tools/dex/`, `extauth.go`", 0},
		{"[x](../examples/oidc/) and [y](helm.md#values) and [z](https://example.com/a.md)", 0},
		{"`harness.RepoRoot(t)`, `extdiff.NewReport`, `(*extension.Runner).Apply`, `(*Runner).Apply`", 0},
		{"`github.com/portcullis/portcullis/controlplane/internal/extdiff`", 0},
		// Not ours, or not a reference.
		{"`retry_back_off.max_interval`, `metav1.Condition`, `http.Handler`, `time.Duration`", 0},
		{"`status.podIP`, `authserver.oidcSecret.name`, `config.yaml`", 0},
		{"`status.Error` (or `sdk.Errorf(codes.X, ...)`)", 0},
		{"prefixed by the area (`builder:`, `authserver/oidc:`)", 0},
		{"`extension/portcullis-auth/testserver`, `/etc/envoy/nosuch.go`", 0},
		{"`extension/proto/.../extension.proto`, `examples/<name>/`", 0},
		{"a regex `(?i)[a-z0-9]([-a-z0-9]*[a-z0-9])?\\.example\\.com`", 0},
	} {
		c := &checker{idx: idx, file: "docs/page.md"}
		c.checkFile(tc.line)
		if len(c.problems) != tc.stale {
			t.Errorf("%s: %d stale references, want %d: %v", tc.line, len(c.problems), tc.stale, c.problems)
		}
	}
}
