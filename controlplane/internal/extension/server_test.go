package extension

import (
	"context"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// calls counts the calls an extension received, by hook.
type calls struct {
	mu sync.Mutex
	n  map[Hook]int
}

func (c *calls) get(h Hook) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[h]
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// serve serves ext with sdk.Serve on a loopback port until the test ends;
// it returns the address and the calls it receives.
func serve(t *testing.T, ext *sdk.Server, opts ...grpc.ServerOption) (string, *calls) {
	t.Helper()
	c := &calls{n: map[Hook]int{}}
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c.mu.Lock()
		c.n[Hook(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:])]++
		c.mu.Unlock()
		return handler(ctx, req)
	}
	return sdktest.Listen(t, ext, append(opts, grpc.ChainUnaryInterceptor(count))...), c
}

// retryPolicy is the kind of the extension resource of the tests' routes;
// bucket a backend kind.
var (
	retryPolicy = schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "RetryPolicy"}
	bucket      = schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "Bucket"}
)

// newRunner dials reg's extension and returns its runner. A registration
// without a name is named "test"; one subscribed to PostRouteModify
// (PostClusterModify) without kinds gets RetryPolicy (Bucket).
func newRunner(t *testing.T, reg Registration) *Runner {
	t.Helper()
	if reg.Name == "" {
		reg.Name = "test"
	}
	if reg.Subscribed(HookPostRouteModify) && len(reg.Resources)+len(reg.PolicyResources) == 0 {
		reg.Resources = []schema.GroupVersionKind{retryPolicy}
	}
	if reg.Subscribed(HookPostClusterModify) && len(reg.BackendResources) == 0 {
		reg.BackendResources = []schema.GroupVersionKind{bucket}
	}
	conn, err := Dial(reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r, err := NewRunner(reg, conn)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// frozen is a deep copy of resources, to check they did not change.
type frozen struct {
	orig   *translator.Resources
	copies [][]proto.Message
	lists  [][]proto.Message
}

func freeze(r *translator.Resources) *frozen {
	f := &frozen{orig: r}
	for _, l := range [][]proto.Message{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		f.lists = append(f.lists, append([]proto.Message(nil), l...))
		c := make([]proto.Message, len(l))
		for i, m := range l {
			c[i] = proto.Clone(m)
		}
		f.copies = append(f.copies, c)
	}
	return f
}

// check fails the test when the resources (lists or messages) changed.
func (f *frozen) check(t *testing.T) {
	t.Helper()
	r := f.orig
	for i, l := range [][]proto.Message{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		if len(l) != len(f.lists[i]) {
			t.Fatalf("the input's list %d changed length: %d, was %d", i, len(l), len(f.lists[i]))
		}
		for j, m := range l {
			if m != f.lists[i][j] {
				t.Errorf("the input's list %d, item %d was replaced", i, j)
			}
			if !proto.Equal(m, f.copies[i][j]) {
				t.Errorf("the input's %s changed: %v", translator.ResourceName(m), m)
			}
		}
	}
}
