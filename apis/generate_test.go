package apis_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates the deepcopy code and the CRD
// manifests into a temporary directory with hack/generate.sh and compares
// them with the committed files.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	cg := filepath.Join(root, ".tools", "bin", "controller-gen")
	if _, err := os.Stat(cg); err != nil {
		t.Fatalf("controller-gen not found: run `make tools` (looked for %s)", cg)
	}

	tmp := t.TempDir()
	crdOut := filepath.Join(tmp, "crds")
	objOut := filepath.Join(tmp, "object")
	cmd := exec.Command("bash", filepath.Join(root, "hack", "generate.sh"))
	cmd.Env = append(os.Environ(), "CONTROLLER_GEN="+cg, "CRD_OUT="+crdOut, "OBJECT_OUT="+objOut)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/generate.sh: %v\n%s", err, out)
	}

	apis := filepath.Join(root, "apis")
	committed := map[string]string{} // relative name -> committed path
	generated := map[string]string{} // relative name -> generated path

	crds, _ := filepath.Glob(filepath.Join(apis, "crds", "*.yaml"))
	for _, p := range crds {
		committed["crds/"+filepath.Base(p)] = p
	}
	gcrds, _ := filepath.Glob(filepath.Join(crdOut, "*.yaml"))
	for _, p := range gcrds {
		generated["crds/"+filepath.Base(p)] = p
	}
	err := filepath.WalkDir(objOut, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(objOut, p)
		rel = filepath.ToSlash(rel)
		generated[rel] = p
		committed[rel] = filepath.Join(apis, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A committed deepcopy file for a package that no longer generates one is stale too.
	var deepcopies []string
	for _, group := range []string{"projectcontour", "gateway"} {
		files, _ := filepath.Glob(filepath.Join(apis, group, "*", "zz_generated.deepcopy.go"))
		deepcopies = append(deepcopies, files...)
	}
	for _, p := range deepcopies {
		rel, _ := filepath.Rel(apis, p)
		committed[filepath.ToSlash(rel)] = p
	}
	if len(generated) == 0 {
		t.Fatal("hack/generate.sh produced no files")
	}

	var names []string
	for n := range committed {
		names = append(names, n)
	}
	for n := range generated {
		if _, ok := committed[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)

	stale := false
	for _, n := range names {
		g, ok := generated[n]
		if !ok {
			t.Errorf("apis/%s is committed but no longer generated", n)
			stale = true
			continue
		}
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(committed[n])
		if os.IsNotExist(err) {
			t.Errorf("apis/%s is generated but not committed", n)
			stale = true
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("apis/%s is stale:\n%s", n, firstDifference(got, want))
			stale = true
		}
	}
	if stale {
		t.Log("run `make generate` and commit the result")
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
