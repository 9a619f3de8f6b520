package harness

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Stack is a running Portcullis deployment as a scenario sees it: where its
// objects go and where traffic enters. The local harness builds one from
// the processes started here; a kind cluster would build another.
type Stack struct {
	Objects   Objects // where the scenario's objects go
	HTTPAddr  string  // Envoy's HTTP listener, host:port
	HTTPSAddr string  // Envoy's HTTPS listener, host:port
}

// HTTP returns a client whose requests all go to the HTTP listener.
func (s *Stack) HTTP() *http.Client { return HTTPClient(s.HTTPAddr) }

// HTTPS returns a client whose requests all go to the HTTPS listener and
// that trusts only caPEM.
func (s *Stack) HTTPS(caPEM []byte) *http.Client { return HTTPSClient(caPEM, s.HTTPSAddr) }

// Objects is where a scenario puts its Kubernetes objects. *APIServer (or
// any cluster, through Cluster) and Dir implement it.
type Objects interface {
	Apply(ctx context.Context, objs ...client.Object) error
	Delete(ctx context.Context, objs ...client.Object) error
}

// Cluster is Objects for any cluster reached through a client.
type Cluster struct{ Client client.Client }

// Apply creates or updates objs; see the function Apply.
func (c Cluster) Apply(ctx context.Context, objs ...client.Object) error {
	return Apply(ctx, c.Client, objs...)
}

// Delete deletes objs; see the function Delete.
func (c Cluster) Delete(ctx context.Context, objs ...client.Object) error {
	return Delete(ctx, c.Client, objs...)
}

// Apply creates or updates objs in the API server.
func (a *APIServer) Apply(ctx context.Context, objs ...client.Object) error {
	return Apply(ctx, a.Client, objs...)
}

// Delete deletes objs from the API server.
func (a *APIServer) Delete(ctx context.Context, objs ...client.Object) error {
	return Delete(ctx, a.Client, objs...)
}

// Dir is Objects for `portcullis serve --provider file`: each object lives
// in its own file, <kind>-<namespace>-<name>.yaml, in the folder.
type Dir string

// Apply writes each object to its file, atomically.
func (d Dir) Apply(_ context.Context, objs ...client.Object) error {
	for _, obj := range objs {
		b, err := MarshalYAML(obj)
		if err != nil {
			return err
		}
		if err := writeAtomic(d.file(obj), b); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes each object's file.
func (d Dir) Delete(_ context.Context, objs ...client.Object) error {
	for _, obj := range objs {
		if err := os.Remove(d.file(obj)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (d Dir) file(obj client.Object) string {
	return filepath.Join(string(d), strings.ReplaceAll(describe(obj), "/", "-")+".yaml")
}
