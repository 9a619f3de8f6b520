package extension

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// fixtureYAML has two plaintext virtual hosts with different routes (so
// that the translator does not merge them) on one Service.
const fixtureYAML = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-1
  namespace: default
  labels: {kubernetes.io/service-name: echo}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints: [{addresses: ["10.0.2.1"]}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: a, namespace: default}
spec:
  virtualhost: {fqdn: a.example.com}
  routes:
  - conditions: [{prefix: /a}]
    services: [{name: echo, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: b, namespace: default}
spec:
  virtualhost: {fqdn: b.example.com}
  routes:
  - conditions: [{prefix: /b}]
    services: [{name: echo, port: 80}]
`

// routeAName is the name translate gives the route of a.example.com.
const routeAName = "route-a"

// translate runs the pipeline on YAML objects, and names the first route
// of a.example.com routeAName when there is one: HTTPProxy routes have no
// names, the routes of HTTPRoute rules with extension resources do (the
// hooks find them by it; their own test is the serve package's).
func translate(t *testing.T, in string) *translator.Resources {
	t.Helper()
	var s objects.Set
	if _, err := s.Decode(strings.NewReader(in), "fixture"); err != nil {
		t.Fatal(err)
	}
	res := pipeline.Run(&s, pipeline.DefaultOptions()).Resources
	for i, m := range res.Routes {
		rc, ok := m.(*routev3.RouteConfiguration)
		if !ok || rc.GetName() != translator.HTTPRouteConfigName {
			continue
		}
		for j, vh := range rc.GetVirtualHosts() {
			if vh.GetName() == "a.example.com" && len(vh.GetRoutes()) > 0 {
				rc = proto.Clone(rc).(*routev3.RouteConfiguration)
				rc.VirtualHosts[j].Routes[0].Name = routeAName
				res.Routes[i] = rc
				return res
			}
		}
	}
	return res
}
