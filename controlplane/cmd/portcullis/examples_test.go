package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestExamplesAreValid translates every example with the files its README
// serves, strictly: each resource of an example must be valid, and the
// example must show what it is there for.
func TestExamplesAreValid(t *testing.T) {
	const ex = "../../../examples/"
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the YAML output
	}{
		{"quickstart", []string{"-f", ex + "quickstart"}, []string{"envoy.filters.http.ext_authz", "echo.example.com"}},
		{"extension-service-health", []string{"-f", ex + "extension-service-health"}, []string{"2/3 endpoints ready", "grpcHealthCheck"}},
		{"external-processing", []string{"-f", ex + "external-processing/resources"}, []string{"envoy.filters.http.ext_proc", "ExtProcPerRoute"}},
		{"global-external-authorization", []string{"--config", ex + "global-external-authorization/portcullis.yaml", "-f", ex + "global-external-authorization/resources"},
			[]string{"envoy.filters.http.ext_authz", "envoy.filters.http.ext_proc"}},
		{"htpasswd", []string{"-f", ex + "htpasswd/resources"},
			[]string{"htpasswd.portcullis.dev/realm"}},
		{"oidc", []string{"-f", ex + "oidc/resources"}, []string{"envoy.filters.http.ext_authz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(append([]string{"translate", "--strict"}, tc.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if strings.Contains(out, "warnings:") {
				t.Errorf("an example resource has warnings:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
		})
	}
}

// TestEveryExampleFolderTranslates runs what a newcomer runs first,
// `portcullis translate -f examples/<folder>/`, on every folder: it
// succeeds strictly (every resource valid, no warnings), and the files that
// are not resources (servers' configuration files) are skipped with a note
// naming them.
func TestEveryExampleFolderTranslates(t *testing.T) {
	const ex = "../../../examples/"
	entries, err := os.ReadDir(ex)
	if err != nil {
		t.Fatal(err)
	}
	folders := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		folders++
		t.Run(e.Name(), func(t *testing.T) {
			out, errOut, err := run("translate", "--strict", "-f", ex+e.Name()+"/")
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if strings.Contains(out, "warnings:") {
				t.Errorf("a resource has warnings:\n%s", out)
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if line != "" && !strings.HasPrefix(line, "skipped ") {
					t.Errorf("stderr has more than skip notes: %q", line)
				}
			}
		})
	}
	if folders < 7 {
		t.Fatalf("found %d example folders, want at least 7", folders)
	}
}

// run runs the portcullis command line with args, as a user would.
func run(args ...string) (stdout, stderr string, err error) {
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}
