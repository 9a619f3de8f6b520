package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
	extv1alpha1 "github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// renamedWithoutAuthz is the answer that opened hosts before the guard:
// every listener renamed, its ext_authz filters dropped.
func renamedWithoutAuthz(ls []*listenerv3.Listener) ([]*listenerv3.Listener, error) {
	var out []*listenerv3.Listener
	for _, l := range ls {
		l = proto.Clone(l).(*listenerv3.Listener)
		l.Name += "-copy"
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(h) != nil {
					continue
				}
				h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return strings.Contains(f.GetName(), "ext_authz") })
				a, err := anypb.New(h)
				if err != nil {
					return nil, err
				}
				f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// TestExtensionCannotOpen: an extension whose PostTranslateModify renames
// the listener and drops ext_authz (which Portcullis published before,
// answering 200 where the auth server said 403) is refused; under
// failurePolicy Closed the last good configuration stays, so the denied
// route is still denied by the real auth server through the real Envoy
// and the change that came with the answer waits; it is published once the
// extension answers what may be published.
func TestExtensionCannotOpen(t *testing.T) {
	var opening atomic.Bool
	var openingAnswers atomic.Int32
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sdk.Serve(ctx, lis, &sdk.Server{TranslateModify: func(_ context.Context, req *extv1alpha1.PostTranslateModifyRequest) (*extv1alpha1.PostTranslateModifyResponse, error) {
			resp := &extv1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(),
				Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}
			if opening.Load() {
				ls, err := renamedWithoutAuthz(req.GetListeners())
				if err != nil {
					return nil, err
				}
				resp.Listeners = ls
				openingAnswers.Add(1)
			}
			return resp, nil
		}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf(`globalExtAuth:
  extensionService: %s/auth-h2c
  failOpen: false
  responseTimeout: 2s
extensions:
- name: opener
  address: %s
  hooks: [PostTranslateModify]
  failurePolicy: Closed
  timeout: 5s
`, harness.AuthNamespace, lis.Addr()))
	s, c := harness.StartKubernetesStack(t, "--config", cfg)
	h2c := "h2c"
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	proxy := func(routes ...contourv1.Route) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
			Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "app.example.com"}, Routes: routes}}
	}
	deny := contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: "/deny"}}, Services: echo,
		AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "auth-h2c"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth-h2c", Port: 9443}}}},
		proxy(deny, contourv1.Route{Services: echo}),
	}
	objs = append(objs, s.Loopback("default", "echo", 80, c.Echo.Port)...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "auth-h2c", 9443, harness.Port(t, c.AuthH2C))...)
	if err := s.Objects.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	hc := s.HTTP()
	status := func(path string) (int, error) {
		resp, err := hc.Do(harness.MustRequest(t, "http://app.example.com"+path))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	want := func(path string, code int) func() error {
		return func() error {
			got, err := status(path)
			if err != nil {
				return err
			}
			if got != code {
				return fmt.Errorf("%s: %d, want %d", path, got, code)
			}
			return nil
		}
	}
	harness.Eventually(t, 60*time.Second, want("/deny", http.StatusForbidden))
	harness.Eventually(t, 30*time.Second, want("/", http.StatusOK))

	// The extension turns to the opening answer; a change comes with it.
	opening.Store(true)
	added := contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: "/added"}}, Services: echo,
		AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"testserver.portcullis.dev/deny": "403"}}}
	if err := s.Objects.Apply(context.Background(), proxy(deny, added, contourv1.Route{Services: echo})); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if openingAnswers.Load() == 0 {
			return fmt.Errorf("the extension was not asked since the change")
		}
		return nil
	})
	for range 5 {
		if err := want("/deny", http.StatusForbidden)(); err != nil {
			t.Fatalf("with the opening answer refused: %v", err)
		}
		// /added is not published: / (open) takes it, as before the change.
		if err := want("/added", http.StatusOK)(); err != nil {
			t.Fatalf("with the opening answer refused, the change must wait: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The extension answers what may be published: the change is.
	opening.Store(false)
	harness.Eventually(t, 60*time.Second, want("/added", http.StatusForbidden))
	harness.Eventually(t, 10*time.Second, want("/deny", http.StatusForbidden))
}
