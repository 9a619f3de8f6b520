package extstage

import (
	"context"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// An extension registered through an ExtensionService is called at the
// endpoints the build gives that ExtensionService; without any it is
// Unreachable and its calls fail. (Both commands run Run: translate
// --show-extension-diff once gave such an extension no endpoints.)
func TestRunResolvesExtensionService(t *testing.T) {
	addr := sdktest.Listen(t, &sdk.Server{
		TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			return &v1alpha1.PostTranslateInsertResponse{Clusters: []*clusterv3.Cluster{{
				Name: "ext-added", ConnectTimeout: durationpb.New(time.Second),
				ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
			}}}, nil
		},
	})
	chain, closeConns, err := extension.Connect([]extension.Registration{{Name: "inserter", Service: "vendor/ext",
		Hooks: []extension.Hook{extension.HookPostTranslateInsert}, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeConns)
	opts := pipeline.DefaultOptions()

	set := extensionService(t, addr, false)
	run := Run(t.Context(), chain, pipeline.Run(set, opts), SecretsOf(set))
	if len(run.Unreachable) != 1 || run.Unreachable[0].Name != "inserter" {
		t.Errorf("without endpoints: unreachable %v, want the inserter", run.Unreachable)
	}
	if len(run.Failures) != 1 || run.After != nil {
		t.Errorf("without endpoints: failures %v, after %v: want one failure, nothing to publish (Closed)", run.Failures, run.After)
	}

	// The endpoints come: it is called there.
	set = extensionService(t, addr, true)
	run = Run(t.Context(), chain, pipeline.Run(set, opts), SecretsOf(set))
	if len(run.Unreachable) != 0 || len(run.Failures) != 0 || run.After == nil {
		t.Fatalf("with endpoints: unreachable %v, failures %v, after %v", run.Unreachable, run.Failures, run.After)
	}
	if n := len(run.After.Resources.Clusters) - len(run.Before.Resources.Clusters); n != 1 {
		t.Errorf("the extension's cluster: %d clusters added, want 1", n)
	}
	if len(run.Stages) != 2 || run.Stages[0] != run.Before.Resources || run.Stages[1] != run.After.Resources {
		t.Errorf("stages: %v, want the input and the one extension's output", run.Stages)
	}
}

// extensionService is the ExtensionService vendor/ext over a Service
// whose endpoint, with endpoints, is addr.
func extensionService(t *testing.T, addr string, endpoints bool) *objects.Set {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	in := `
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: vendor}
spec:
  ports: [{name: grpc, port: 9000, targetPort: ` + port + `}]
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata: {name: ext, namespace: vendor}
spec:
  protocol: h2c
  services: [{name: ext, port: 9000}]
`
	if endpoints {
		in += `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-1, namespace: vendor, labels: {kubernetes.io/service-name: ext}}
addressType: IPv4
ports: [{name: grpc, port: ` + port + `}]
endpoints: [{addresses: ["` + host + `"]}]
`
	}
	s := &objects.Set{}
	if _, err := s.Decode(strings.NewReader(in), "test"); err != nil {
		t.Fatal(err)
	}
	s.Sort()
	return s
}
