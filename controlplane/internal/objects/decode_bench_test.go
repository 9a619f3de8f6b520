package objects

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkDecode reads 2,000 HTTPProxies of the scale benchmark's shape
// from one YAML stream (`portcullis translate` and file mode read this way).
func BenchmarkDecode(b *testing.B) {
	var doc bytes.Buffer
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&doc, `apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root-%d, namespace: bench}
spec:
  virtualhost:
    fqdn: host-%d.bench.example.com
    tls: {secretName: tls}
    authorization: {extensionRef: {name: auth}}
  includes:
  - name: child-%d
    conditions: [{prefix: /child}]
  routes:
  - conditions: [{prefix: /r0}]
    services: [{name: svc-1, port: 80}]
  - conditions: [{prefix: /r1}]
    services: [{name: svc-2, port: 80}]
  - conditions: [{prefix: /r2}]
    services: [{name: svc-3, port: 80}]
  - conditions: [{prefix: /r3}]
    services: [{name: svc-4, port: 80}]
  - conditions: [{prefix: /r4}]
    services: [{name: svc-5, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: child-%d, namespace: bench}
spec:
  routes:
  - services: [{name: svc-1, port: 80}]
---
`, i, i, i, i)
	}
	for b.Loop() {
		var s Set
		if _, err := s.Decode(bytes.NewReader(doc.Bytes()), "bench.yaml"); err != nil {
			b.Fatal(err)
		}
		if len(s.HTTPProxies) != 2000 {
			b.Fatalf("%d proxies", len(s.HTTPProxies))
		}
	}
}
