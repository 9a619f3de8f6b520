package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The extension module's directory and the repository's, from this
// package's.
const (
	moduleDir = "../.."
	repoDir   = "../../.."
)

// TestGeneratedCodeIsCurrent generates the code of proto/ and compares it
// with the committed files under api/.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	pluginDir := filepath.Join(repoDir, ".tools", "bin")
	for _, p := range plugins {
		if _, err := os.Stat(filepath.Join(pluginDir, p)); err != nil {
			t.Fatalf("%s not found: run `make tools` (looked for %s)", p, filepath.Join(pluginDir, p))
		}
	}
	generated, err := Generate(context.Background(), filepath.Join(moduleDir, "proto"), pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) == 0 {
		t.Fatal("no files generated")
	}

	committed := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(moduleDir, "api"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pb.go") {
			return err
		}
		rel, err := filepath.Rel(moduleDir, p)
		committed[filepath.ToSlash(rel)] = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range committed {
		names = append(names, n)
	}
	for n := range generated {
		if !committed[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)

	stale := false
	for _, n := range names {
		want, ok := generated[n]
		if !ok {
			t.Errorf("extension/%s is committed but no longer generated", n)
			stale = true
			continue
		}
		got, err := os.ReadFile(filepath.Join(moduleDir, filepath.FromSlash(n)))
		if os.IsNotExist(err) {
			t.Errorf("extension/%s is generated but not committed", n)
			stale = true
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("extension/%s is stale:\n%s", n, firstDifference(got, want))
			stale = true
		}
	}
	if stale {
		t.Log("run `make generate` and commit the result")
	}
}

// TestMissingPlugin: without the plugins, Generate says how to get them.
func TestMissingPlugin(t *testing.T) {
	_, err := Generate(context.Background(), filepath.Join(moduleDir, "proto"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "run `make tools`") {
		t.Errorf("err = %v, want one that says to run `make tools`", err)
	}
}

// TestUnresolvedImport: an import neither local nor registered by a linked
// Go package fails compilation, naming the file.
func TestUnresolvedImport(t *testing.T) {
	dir := t.TempDir()
	src := `syntax = "proto3";
package x;
import "envoy/config/nosuch/v3/nosuch.proto";
`
	if err := os.WriteFile(filepath.Join(dir, "x.proto"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := request(context.Background(), dir, []string{"x.proto"})
	if err == nil || !strings.Contains(err.Error(), "envoy/config/nosuch/v3/nosuch.proto") {
		t.Errorf("err = %v, want one naming the import", err)
	}
}

// TestRequestOrder: every file of the plugin request comes after its
// dependencies, and the files to generate are sent as source too.
func TestRequestOrder(t *testing.T) {
	req, err := request(context.Background(), filepath.Join(moduleDir, "proto"), []string{"portcullis/extension/v1alpha1/extension.proto"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range req.GetProtoFile() {
		for _, dep := range f.GetDependency() {
			if !seen[dep] {
				t.Errorf("%s comes before its dependency %s", f.GetName(), dep)
			}
		}
		if seen[f.GetName()] {
			t.Errorf("%s sent twice", f.GetName())
		}
		seen[f.GetName()] = true
	}
	for _, want := range []string{"envoy/config/route/v3/route_components.proto", "validate/validate.proto", "google/protobuf/descriptor.proto"} {
		if !seen[want] {
			t.Errorf("%s not in the request", want)
		}
	}
	if n := len(req.GetSourceFileDescriptors()); n != 1 || req.GetSourceFileDescriptors()[0].GetSourceCodeInfo() == nil {
		t.Errorf("source file descriptors: %d, want 1 with source code info (the comments)", n)
	}
}

// firstDifference describes where two texts first differ, diff style, with
// a little context.
func firstDifference(committed, generated []byte) string {
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(generated), "\n")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "@@ first difference at line %d (committed %d lines, generated %d lines) @@\n", i+1, len(a), len(b))
	for j := max(0, i-3); j < i; j++ {
		fmt.Fprintf(&sb, "  %s\n", a[j])
	}
	for j := i; j < min(len(a), i+5); j++ {
		fmt.Fprintf(&sb, "- %s\n", a[j])
	}
	for j := i; j < min(len(b), i+5); j++ {
		fmt.Fprintf(&sb, "+ %s\n", b[j])
	}
	return sb.String()
}
