package serve

import (
	"strings"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

func TestWithEnvoyRejections(t *testing.T) {
	set, _, err := file.Load([]string{"../pipeline/testdata/common", "../pipeline/testdata/spec-external-authorization-sample/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(set, pipeline.Options{Translator: translator.DefaultOptions()})
	attr := pipeline.NewAttribution(res)
	tests := []struct {
		name             string
		rejection        xdsserver.Rejection
		wantInvalid      []string
		wantUnattributed int
	}{
		{"an extension cluster: its ExtensionService and the proxy using it",
			xdsserver.Rejection{TypeURL: resourcev3.ClusterType, Version: "7", Resources: []string{"extension/contour-auth/testserver"}, Message: "bad cluster"},
			[]string{"ExtensionService contour-auth/testserver", "HTTPProxy default/echo"}, 0},
		{"nothing known: log and metric only",
			xdsserver.Rejection{TypeURL: resourcev3.ClusterType, Version: "7", Resources: []string{"other"}, Message: "bad"},
			nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, un := withEnvoyRejections(res.Build, attr, []xdsserver.Rejection{tt.rejection})
			if len(un) != tt.wantUnattributed {
				t.Errorf("unattributed = %d, want %d", len(un), tt.wantUnattributed)
			}
			var invalid []string
			for _, o := range b.Status {
				for _, p := range o.Errors {
					if p.Type == TypeEnvoyRejected {
						invalid = append(invalid, o.Ref.String())
						if !strings.Contains(p.Message, "bad") || !strings.Contains(p.Message, "version 7") {
							t.Errorf("message %q lacks Envoy's error or the version", p.Message)
						}
					}
				}
			}
			if strings.Join(invalid, ",") != strings.Join(tt.wantInvalid, ",") {
				t.Errorf("EnvoyRejected on %v, want %v", invalid, tt.wantInvalid)
			}
			for _, o := range res.Build.Status {
				for _, p := range o.Errors {
					if p.Type == TypeEnvoyRejected {
						t.Fatalf("the build's own findings were modified (%s)", o.Ref)
					}
				}
			}
		})
	}
}
