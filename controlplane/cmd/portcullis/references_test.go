package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository is its own reference (docs/design/): no tracked file may
// point at the design documents that once lived beside it, or link to a
// path outside the repository. The strings are split so that this file
// does not match itself.
var outsideReferences = []string{
	"shared" + "/spec",
	"DESIGN" + ".md",
	"../" + "shared",
	"/work" + "/shared",
}

// markdownLink finds the target of a Markdown link or image.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestNoReferencesOutsideTheRepository reads every tracked text file.
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	// The tracked files are git's list: run the tests from a clone.
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v (run the tests from a git clone of the repository, with git installed)", root, err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files: not the repository?", len(files))
	}
	for _, f := range files {
		path := filepath.Join(root, f)
		fi, err := os.Lstat(path)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			continue // a symbolic link: its target is checked on its own
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, s := range outsideReferences {
				if strings.Contains(line, s) {
					t.Errorf("%s:%d: refers to %q, outside the repository: point into docs/design/ instead", f, i+1, s)
				}
			}
			if !strings.HasSuffix(f, ".md") {
				continue
			}
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				if target := linkPath(m[1]); target != "" && escapes(root, filepath.Dir(filepath.Join(root, f)), target) {
					t.Errorf("%s:%d: links to %s, outside the repository", f, i+1, m[1])
				}
			}
		}
	}
}

// linkPath is the file part of a relative link target; "" for URLs,
// anchors and absolute paths.
func linkPath(target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "/") {
		return ""
	}
	target, _, _ = strings.Cut(target, "#")
	return target
}

// escapes reports whether target, relative to dir, leaves root.
func escapes(root, dir, target string) bool {
	rel, err := filepath.Rel(root, filepath.Join(dir, target))
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
