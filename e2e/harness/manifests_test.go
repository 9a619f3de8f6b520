package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestManifests renders a scenario's objects for the file provider.
func TestManifests(t *testing.T) {
	t.Parallel()
	ca := NewCA(t, "ca")
	kp := ca.Issue(t, "echo.example.com", "127.0.0.1")
	// Typed objects without TypeMeta get apiVersion and kind from Scheme.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e", UID: "server-set"}}
	objs := []client.Object{ns, kp.Secret("e2e", "echo-tls"), ca.Secret("e2e", "echo-ca")}

	dir := t.TempDir()
	path := WriteYAML(t, dir, "scenario.yaml", objs...)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3:\n%s", len(docs), b)
	}
	var first map[string]any
	if err := yaml.Unmarshal([]byte(docs[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["apiVersion"] != "v1" || first["kind"] != "Namespace" {
		t.Errorf("first document: %v", first)
	}
	if strings.Contains(docs[0], "uid") || strings.Contains(docs[0], "creationTimestamp") || strings.Contains(docs[0], "status") {
		t.Errorf("server-set fields left in:\n%s", docs[0])
	}
	var secret corev1.Secret
	if err := yaml.Unmarshal([]byte(docs[1]), &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS || string(secret.Data["tls.crt"]) != string(kp.CertPEM) {
		t.Errorf("TLS secret did not round-trip: %+v", secret)
	}

	// Dir keeps one file per object.
	objDir := Dir(t.TempDir())
	ctx := context.Background()
	if err := objDir.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(string(objDir), "secret-e2e-echo-ca.yaml")
	if _, err := os.Stat(want); err != nil {
		t.Errorf("Dir.Apply: %v", err)
	}
	if err := objDir.Delete(ctx, objs[2], objs[2]); err != nil {
		t.Errorf("Dir.Delete (twice): %v", err)
	}
	if entries, _ := os.ReadDir(string(objDir)); len(entries) != 2 {
		t.Errorf("%d files left, want 2", len(entries))
	}
}
