package serve

import (
	"maps"
	"strings"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

func TestWithEnvoyRejections(t *testing.T) {
	set, _, err := file.Load([]string{"../pipeline/testdata/common", "../pipeline/testdata/auth-policy-routes/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(set, pipeline.DefaultOptions())
	idx := res.Resources.Index
	tests := []struct {
		name             string
		rejection        xdsserver.Rejection
		wantInvalid      []string
		wantUnattributed int
	}{
		{"an extension cluster: its ExtensionService and the proxies using it",
			xdsserver.Rejection{TypeURL: resourcev3.ClusterType, Version: "7", Resources: []string{"extension/default/auth"}, Message: "bad cluster"},
			[]string{"ExtensionService default/auth", "HTTPProxy default/default-off", "HTTPProxy default/protected"}, 0},
		{"nothing known: log and metric only",
			xdsserver.Rejection{TypeURL: resourcev3.ClusterType, Version: "7", Resources: []string{"other"}, Message: "bad"},
			nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, un := withEnvoyRejections(res.Build.Status, idx, []xdsserver.Rejection{tt.rejection}, nil)
			if len(un) != tt.wantUnattributed {
				t.Errorf("unattributed = %d, want %d", len(un), tt.wantUnattributed)
			}
			var invalid []string
			for _, o := range objs {
				for _, p := range o.Errors {
					if p.Type == status.TypeEnvoyRejected {
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
					if p.Type == status.TypeEnvoyRejected {
						t.Fatalf("the build's own findings were modified (%s)", o.Ref)
					}
				}
			}
		})
	}
}

func TestChangedStatusesAndMerge(t *testing.T) {
	set, _, err := file.Load([]string{"../pipeline/testdata/common", "../pipeline/testdata/auth-policy-routes/in.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(set, pipeline.DefaultOptions())
	st := pipeline.Statuses(set, res.Build.Status, metav1.Now())
	s := &Server{}
	uids := pipeline.UIDs(set)
	if got := s.changedStatuses(res.Build.Status, st, uids); len(got) != len(st) {
		t.Fatalf("first publish: %d statuses, want all %d", len(got), len(st))
	}
	if got := s.changedStatuses(res.Build.Status, st, uids); len(got) != 0 {
		t.Errorf("unchanged findings: %d statuses to write, want none", len(got))
	}
	// An object deleted and created again under its name (a new UID)
	// between two builds: the same findings, another object to write.
	recreated := maps.Clone(uids)
	recreated[res.Build.Status[0].Ref] = "a-new-uid"
	if got := s.changedStatuses(res.Build.Status, st, recreated); len(got) != 1 || got[0].Ref != res.Build.Status[0].Ref {
		t.Errorf("a recreated object: %d statuses to write, want its one", len(got))
	}
	uids = recreated
	rejected, _ := withEnvoyRejections(res.Build.Status, res.Resources.Index, []xdsserver.Rejection{{
		TypeURL: resourcev3.ClusterType, Resources: []string{"extension/default/auth"}, Message: "bad"}}, nil)
	if got := s.changedStatuses(rejected, pipeline.Statuses(set, rejected, metav1.Now()), uids); len(got) != 3 {
		t.Errorf("after a rejection: %d statuses to write, want 3 (the ExtensionService and its two HTTPProxies)", len(got))
	}
	s.lastFullPass = time.Time{}
	if got := s.changedStatuses(rejected, st, uids); len(got) != len(st) {
		t.Errorf("full pass: %d statuses, want all %d", len(got), len(st))
	}

	merged := mergeBatches(st[:1], st)
	if len(merged) != len(st) || merged[0].Ref != st[0].Ref {
		t.Errorf("merge: %d statuses, want %d with the newer batch first", len(merged), len(st))
	}
}
