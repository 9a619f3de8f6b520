package version

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	full := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/portcullis/portcullis/controlplane", Version: "(devel)"},
		Deps:      []*debug.Module{{Path: "github.com/envoyproxy/go-control-plane/envoy", Version: "v1.40.0"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name    string
		bi      *debug.BuildInfo
		release string
		commit  string
		want    string
	}{
		{"development build", full, "", "", "dev (commit 0123456789ab, modified, go1.26.0, Envoy API v3, go-control-plane v1.40.0)"},
		{"release and commit set at link time", full, "v1.2.3", "fedcba9", "v1.2.3 (commit fedcba9, modified, go1.26.0, Envoy API v3, go-control-plane v1.40.0)"},
		{"module version, clean tree, no envoy dependency", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			"", "", "v0.3.0 (commit abc, go1.26.0, Envoy API v3)"},
		{"no build information", nil, "", "", "dev (commit unknown, unknown, Envoy API v3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(tc.bi, tc.release, tc.commit); got != tc.want {
				t.Errorf("describe = %q\n want %q", got, tc.want)
			}
		})
	}
}
