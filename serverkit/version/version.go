// Package version describes a binary from its build metadata (the module
// version, the VCS revision Go records at build time, the Go version) and
// the Envoy API it speaks, for every binary's --version.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version and Commit are set at link time by `make build` and the image
// build (-ldflags "-X github.com/portcullis/portcullis/serverkit/version.Version=v1.2.3
// -X ...version.Commit=<sha>"); otherwise they come from the build
// information Go records (module version, VCS revision), when it has them.
var (
	Version = ""
	Commit  = ""
)

// EnvoyAPI is the Envoy API major version every component speaks (xDS,
// ext_authz, ext_proc).
const EnvoyAPI = "v3"

// String is the one-line description --version prints.
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return describe(bi, Version, Commit)
}

// describe renders build information; bi may be nil (a binary built
// without module support).
func describe(bi *debug.BuildInfo, release, revision string) string {
	v, commit, modified, goVersion, cp := release, "unknown", false, "unknown", ""
	if bi != nil {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/envoyproxy/go-control-plane/envoy" {
				cp = d.Version
			}
		}
	}
	if revision != "" {
		commit = revision
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (commit %s", v, commit)
	if modified {
		b.WriteString(", modified")
	}
	fmt.Fprintf(&b, ", %s, Envoy API %s", goVersion, EnvoyAPI)
	if cp != "" {
		fmt.Fprintf(&b, ", go-control-plane %s", cp)
	}
	b.WriteString(")")
	return b.String()
}
