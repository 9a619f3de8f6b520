package main

import (
	"bytes"
	"os"
	"slices"
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
		{"gateway-api/basic", []string{"-f", ex + "gateway-api/basic"},
			[]string{"gateway.example.com", "key: X-Route", `substitution: /new\1`, "attachedRoutes: 1"}},
		{"gateway-api/listenerset", []string{"-f", ex + "gateway-api/listenerset"},
			[]string{"team.example.com", "kind: ListenerSet", "attachedListenerSets: 1"}},
		{"gateway-api/policies", []string{"-f", ex + "gateway-api/policies"},
			[]string{"echo.example.com", "public.example.com", "envoy.filters.http.ext_authz", "htpasswd.portcullis.dev/realm", "kind: ExtAuthPolicy"}},
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
// `portcullis translate -f examples/<folder>/`, on every folder (and on
// every folder of a folder that holds only folders, such as
// examples/gateway-api/): it succeeds strictly (every resource valid, no
// warnings), and the files that are not resources (servers' configuration
// files) are skipped with a note naming them.
func TestEveryExampleFolderTranslates(t *testing.T) {
	const ex = "../../../examples/"
	names, err := exampleFolders(ex, "")
	if err != nil {
		t.Fatal(err)
	}
	folders := 0
	for _, name := range names {
		folders++
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(append([]string{"translate", "--strict", "-f", ex + name + "/"}, exampleInputs(ex, name)...)...)
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
	if folders < 9 {
		t.Fatalf("found %d example folders, want at least 9", folders)
	}
}

// exampleFolders are the folders under root/dir that are examples: those
// with files of their own; a folder with only folders is a group of
// examples, each of its folders one.
func exampleFolders(root, dir string) ([]string, error) {
	entries, err := os.ReadDir(root + dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := dir + e.Name()
		sub, err := os.ReadDir(root + name)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(sub, func(f os.DirEntry) bool { return !f.IsDir() }) {
			out = append(out, name)
			continue
		}
		group, err := exampleFolders(root, name+"/")
		if err != nil {
			return nil, err
		}
		out = append(out, group...)
	}
	return out, nil
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

// exampleInputs are the other arguments an example folder is served with,
// as its README says: its configuration file when it has one (its objects
// are written for the global policies it configures). A folder that
// reuses the quickstart's Secret and upstreams links them, so that it
// translates on its own.
func exampleInputs(ex, name string) []string {
	var args []string
	if _, err := os.Stat(ex + name + "/portcullis.yaml"); err == nil {
		args = append(args, "--config", ex+name+"/portcullis.yaml")
	}
	return args
}
