package crdschema

import (
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

const benchRoute = `{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "default"}, "spec": {"parentRefs": [{"name": "web"}], "hostnames": ["h.example.com"], "rules": [
{"matches": [{"path": {"type": "PathPrefix", "value": "/a"}, "headers": [{"name": "x-a", "value": "1"}]}], "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-b", "value": "2"}], "remove": ["x-c"]}}], "backendRefs": [{"name": "echo", "port": 80}]},
{"matches": [{"path": {"type": "Exact", "value": "/b"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/c"}}}], "backendRefs": [{"name": "echo", "port": 80, "weight": 2}]}]}}`

func benchObj(b *testing.B) map[string]any {
	var obj map[string]any
	if err := utiljson.Unmarshal([]byte(benchRoute), &obj); err != nil {
		b.Fatal(err)
	}
	return obj
}

// BenchmarkCheck: one HTTPRoute of two rules, its rules remembered.
func BenchmarkCheck(b *testing.B) {
	if _, err := checkers(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Check(httpRoute, benchObj(b)); err != nil {
			b.Fatal(err)
		}
	}
}
