package file

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func proxyYAML(name, fqdn string) string {
	return "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: " + name + "}\nspec: {virtualhost: {fqdn: " + fqdn + "}}\n"
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Write beside the file and rename, so that a Watch polling meanwhile
	// never reads a half-written (or empty) file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func names(s *objects.Set) string {
	var out []string
	for _, p := range s.HTTPProxies {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestLoadWalksFoldersInOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.yaml"), proxyYAML("b", "b.example.com"))
	write(t, filepath.Join(dir, "sub", "a.yml"), proxyYAML("a", "a.example.com"))
	write(t, filepath.Join(dir, "c.json"), `{"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": "c"}}`)
	write(t, filepath.Join(dir, "notes.txt"), proxyYAML("txt", "txt.example.com"))
	// A mounted ConfigMap's hidden ..data folder is reached through the
	// symlinks beside it, not read twice.
	write(t, filepath.Join(dir, "..data", "d.yaml"), proxyYAML("hidden", "hidden.example.com"))
	set, _, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(set); got != "a,b,c" {
		t.Errorf("proxies %s, want a,b,c", got)
	}
}

// A file named twice (a folder and a file in it) is read once. Read twice,
// its objects would be there twice, and from the second load on (which
// reuses the file's objects) as the same objects: a root duplicating itself.
func TestLoadReadsAFileNamedTwiceOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	write(t, a, proxyYAML("a", "a.example.com"))
	l := newLoader(nil)
	for i := range 2 {
		set, _, _, err := l.load([]string{dir, a})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(set); got != "a" {
			t.Errorf("load %d: proxies %s, want a", i+1, got)
		}
	}
}

// A load keeps the objects of unchanged files (the same pointers: the
// builder reuses what it built from them) and parses only changed files.
func TestLoaderKeepsUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), proxyYAML("a", "a.example.com"))
	write(t, filepath.Join(dir, "b.yaml"), proxyYAML("b", "b.example.com"))
	l := newLoader(nil)
	first, _, changed, err := l.load([]string{dir})
	if err != nil || !changed {
		t.Fatalf("first load: changed %v, %v", changed, err)
	}

	again, _, changed, err := l.load([]string{dir})
	if err != nil || changed {
		t.Fatalf("unchanged files: changed %v, %v", changed, err)
	}
	if again.HTTPProxies[0] != first.HTTPProxies[0] || again.HTTPProxies[1] != first.HTTPProxies[1] {
		t.Error("unchanged files gave new objects")
	}

	write(t, filepath.Join(dir, "b.yaml"), proxyYAML("b", "b2.example.com"))
	edited, _, changed, err := l.load([]string{dir})
	if err != nil || !changed {
		t.Fatalf("an edited file: changed %v, %v", changed, err)
	}
	if edited.HTTPProxies[0] != first.HTTPProxies[0] {
		t.Error("the unchanged file a.yaml gave a new object")
	}
	if edited.HTTPProxies[1] == first.HTTPProxies[1] || edited.HTTPProxies[1].Spec.VirtualHost.Fqdn != "b2.example.com" {
		t.Errorf("the edited file b.yaml gave %+v", edited.HTTPProxies[1].Spec.VirtualHost)
	}

	write(t, filepath.Join(dir, "b.yaml"), "kind: [broken\n")
	if _, _, changed, err := l.load([]string{dir}); err == nil || !changed || !strings.Contains(err.Error(), "b.yaml") {
		t.Fatalf("a broken file: changed %v, error %v; want an error naming b.yaml", changed, err)
	}
	if _, _, changed, err := l.load([]string{dir}); err == nil || changed {
		t.Fatalf("the same broken file: changed %v, error %v; want the error, unchanged", changed, err)
	}

	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	removed, _, changed, err := l.load([]string{dir})
	if err != nil || !changed || names(removed) != "a" {
		t.Fatalf("a removed file: %s, changed %v, %v", names(removed), changed, err)
	}
}

// Watch sends the first set, then a set for each change, and nothing when
// nothing changed; a broken file keeps the last good set.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), proxyYAML("a", "a.example.com"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sets := make(chan *objects.Set, 10)
	go Watch(ctx, []string{dir}, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), func(s *objects.Set) { sets <- s })
	next := func() *objects.Set {
		t.Helper()
		select {
		case s := <-sets:
			return s
		case <-time.After(5 * time.Second):
			t.Fatal("no update")
			return nil
		}
	}
	if got := names(next()); got != "a" {
		t.Fatalf("first set %s", got)
	}
	select {
	case s := <-sets:
		t.Fatalf("an update (%s) without a change", names(s))
	case <-time.After(100 * time.Millisecond):
	}
	write(t, filepath.Join(dir, "broken.yaml"), "kind: [broken\n")
	write(t, filepath.Join(dir, "b.yaml"), proxyYAML("b", "b.example.com"))
	select {
	case s := <-sets:
		t.Fatalf("an update (%s) with a broken file", names(s))
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.Remove(filepath.Join(dir, "broken.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := names(next()); got != "a,b" {
		t.Fatalf("after the fix %s, want a,b", got)
	}
}

// Objects of the kinds the extension servers registered, in a folder with
// the others, end up in the set (Load and Watch); other unknown kinds are
// skipped.
func TestLoadExtensionKinds(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), proxyYAML("a", "a.example.com"))
	write(t, filepath.Join(dir, "filters", "auth.yaml"), "apiVersion: examples.portcullis.dev/v1alpha1\nkind: BasicAuthFilter\n"+
		"metadata: {name: auth}\nspec: {realm: staff}\n---\napiVersion: examples.portcullis.dev/v1alpha1\nkind: Unregistered\nmetadata: {name: u}\n")
	kind := schema.GroupVersionKind{Group: "examples.portcullis.dev", Version: "v1alpha1", Kind: "BasicAuthFilter"}
	check := func(what string, s *objects.Set) {
		t.Helper()
		if names(s) != "a" || len(s.Extensions) != 1 {
			t.Fatalf("%s: proxies %s, %d extension objects; want a and 1", what, names(s), len(s.Extensions))
		}
		u := s.Extensions[0]
		if realm, _, _ := unstructured.NestedString(u.Object, "spec", "realm"); u.GetKind() != "BasicAuthFilter" || u.GetNamespace() != "default" || u.GetName() != "auth" || realm != "staff" {
			t.Errorf("%s: got %s %s/%s realm %q", what, u.GetKind(), u.GetNamespace(), u.GetName(), realm)
		}
	}
	set, skipped, err := Load([]string{dir}, kind)
	if err != nil {
		t.Fatal(err)
	}
	check("Load", set)
	if len(skipped) != 1 || skipped[0].Kind != "examples.portcullis.dev/v1alpha1/Unregistered" {
		t.Errorf("skipped %v, want the Unregistered object only", skipped)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sets := make(chan *objects.Set, 1)
	go Watch(ctx, []string{dir}, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), func(s *objects.Set) { sets <- s }, kind)
	select {
	case s := <-sets:
		check("Watch", s)
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}

	// Not registered: skipped.
	set, _, err = Load([]string{dir})
	if err != nil || len(set.Extensions) != 0 {
		t.Errorf("without the registration: %d extension objects (%v), want none", len(set.Extensions), err)
	}
}
