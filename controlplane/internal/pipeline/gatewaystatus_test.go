package pipeline_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// gatewayClass is our GatewayClass, echoService the Service routes name.
const (
	gatewayClass = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
`
	echoService = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec: {ports: [{port: 80}]}
`
)

// gatewayBase is the class, a Gateway with one HTTP listener on port 80
// and the Service.
const gatewayBase = gatewayClass + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---` + echoService

// runYAML runs the objects of docs with the default options.
func runYAML(t *testing.T, docs ...string) *pipeline.Result {
	t.Helper()
	return pipeline.Run(decodeYAML(t, docs...), pipeline.DefaultOptions())
}

// runWithoutCRD runs the objects of docs as if their CRD's validation had
// not refused them: as an API server with older CRDs (the chart keeps
// a cluster's own) lets them in, for the builder's own rules.
func runWithoutCRD(t *testing.T, docs ...string) *pipeline.Result {
	t.Helper()
	set := decodeYAML(t, docs...)
	set.DropCRDComplaints()
	return pipeline.Run(set, pipeline.DefaultOptions())
}

func decodeYAML(t *testing.T, docs ...string) *objects.Set {
	t.Helper()
	set := &objects.Set{}
	for i, d := range docs {
		if _, err := set.Decode(strings.NewReader(d), "doc"+string(rune('0'+i))); err != nil {
			t.Fatalf("decoding: %v", err)
		}
	}
	set.Sort()
	return set
}

// gatewayConditions are an object's Gateway API conditions: a Gateway's
// own, or its listener's named listener; a route's first parent's.
func gatewayConditions(t *testing.T, res *pipeline.Result, ref objects.Ref, listener string) []metav1.Condition {
	t.Helper()
	for _, o := range res.Build.Status {
		if o.Ref != ref {
			continue
		}
		switch {
		case listener != "":
			for _, l := range o.GatewayAPI.Listeners {
				if string(l.Name) == listener {
					return l.Conditions
				}
			}
			t.Fatalf("%s: no listener %q", ref, listener)
		case ref.Kind == objects.KindGateway:
			return o.GatewayAPI.Conditions
		case len(o.GatewayAPI.Parents) > 0:
			return o.GatewayAPI.Parents[0].Conditions
		}
		t.Fatalf("%s: no conditions", ref)
	}
	t.Fatalf("%s: no status", ref)
	return nil
}

// wantCondition checks a condition's status and reason ("" status: the
// condition must be absent) and that its message holds every one of
// words.
func wantCondition(t *testing.T, cs []metav1.Condition, typ, status, reason string, words ...string) {
	t.Helper()
	c := meta.FindStatusCondition(cs, typ)
	if status == "" {
		if c != nil {
			t.Errorf("%s is set: %+v", typ, c)
		}
		return
	}
	if c == nil || string(c.Status) != status || c.Reason != reason {
		t.Errorf("%s = %+v, want %s/%s", typ, c, status, reason)
		return
	}
	for _, w := range words {
		if !strings.Contains(c.Message, w) {
			t.Errorf("%s's message %q does not say %q", typ, c.Message, w)
		}
	}
}
