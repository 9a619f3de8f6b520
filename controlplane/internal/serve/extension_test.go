package serve

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// extensionObjects are two HTTPProxies, each its own virtual host; prefixA
// is proxy a's route.
func extensionObjects(t *testing.T, prefixA string) *objects.Set {
	t.Helper()
	in := `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: a, namespace: default}
spec:
  virtualhost: {fqdn: a.example.com}
  routes:
  - conditions: [{prefix: ` + prefixA + `}]
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
	var s objects.Set
	if _, err := s.Decode(strings.NewReader(in), "test"); err != nil {
		t.Fatal(err)
	}
	return &s
}

var (
	proxyA = objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "default", Name: "a"}
	proxyB = objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "default", Name: "b"}
)

// headerExtension serves an extension whose PostVirtualHostModify adds
// the response header x-ext to every virtual host, or fails with
// Unavailable while failing is set.
func headerExtension(t *testing.T, failing *atomic.Bool) string {
	t.Helper()
	return sdktest.Listen(t, headerServer(failing))
}

// headerServer is headerExtension's server.
func headerServer(failing *atomic.Bool) *sdk.Server {
	return &sdk.Server{
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			if failing.Load() {
				return nil, grpcstatus.Error(codes.Unavailable, "backend down")
			}
			vh := req.GetVirtualHost()
			vh.ResponseHeadersToAdd = append(vh.ResponseHeadersToAdd, &corev3.HeaderValueOption{
				Header: &corev3.HeaderValue{Key: "x-ext", Value: "added"}})
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
		},
	}
}

// extensionServer is a Server (not serving) with the extension at addr.
func extensionServer(t *testing.T, addr string, policy extension.FailurePolicy) *Server {
	t.Helper()
	s, err := newServer(Config{
		Pipeline: pipeline.DefaultOptions(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Extensions: []extension.Registration{{Name: "header", Address: addr, Hooks: []extension.Hook{extension.HookPostVirtualHostModify},
			FailurePolicy: policy, Timeout: 5 * time.Second}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ext.close)
	return s
}

// published returns the version and resources last published.
func published(s *Server) (string, *translator.Resources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastRes == nil {
		return s.version, nil
	}
	return s.version, s.lastRes.Resources
}

// vhosts are the published HTTP virtual hosts, by name.
func vhosts(t *testing.T, r *translator.Resources) map[string]*routev3.VirtualHost {
	t.Helper()
	out := map[string]*routev3.VirtualHost{}
	for _, m := range r.Routes {
		if translator.ResourceName(m) == translator.HTTPRouteConfigName {
			for _, vh := range m.(*routev3.RouteConfiguration).GetVirtualHosts() {
				out[vh.GetName()] = vh
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no virtual hosts published")
	}
	return out
}

func hasExtHeader(vh *routev3.VirtualHost) bool {
	for _, h := range vh.GetResponseHeadersToAdd() {
		if h.GetHeader().GetKey() == "x-ext" {
			return true
		}
	}
	return false
}

// extensionErrors are the ExtensionError problems of ref's last
// published findings: its errors and its warnings.
func extensionErrors(t *testing.T, s *Server, ref objects.Ref) (errs, warnings []status.Problem) {
	t.Helper()
	o := s.published[ref].findings
	if o == nil {
		t.Fatalf("no status published for %s", ref)
	}
	for _, p := range o.Errors {
		if p.Type == status.TypeExtensionError {
			errs = append(errs, p)
		}
	}
	for _, p := range o.Warnings {
		if p.Type == status.TypeExtensionError {
			warnings = append(warnings, p)
		}
	}
	return errs, warnings
}

// checkProblem checks that an ExtensionError names the hook, the
// resource, the outcome and the gRPC code.
func checkProblem(t *testing.T, p status.Problem, policy string) {
	t.Helper()
	for _, w := range []string{"PostVirtualHostModify", `virtual host "a.example.com"`, "error", "Unavailable", "backend down", "failurePolicy " + policy} {
		if !strings.Contains(p.Message, w) {
			t.Errorf("ExtensionError %q does not say %q", p.Message, w)
		}
	}
	if p.Reason != status.ReasonExtensionHookFailed {
		t.Errorf("reason %q, want %q", p.Reason, status.ReasonExtensionHookFailed)
	}
}

// Under failurePolicy Closed: the extension's change is published; a
// failing hook keeps the last published configuration while the statuses
// move on, with an ExtensionError on the objects of the failed call; the
// next good call publishes and clears it.
func TestExtensionClosed(t *testing.T) {
	var failing atomic.Bool
	s := extensionServer(t, headerExtension(t, &failing), extension.FailClosed)
	ctx := t.Context()

	s.rebuild(ctx, extensionObjects(t, "/a"))
	v1, res1 := published(s)
	if v1 == "" || res1 == nil {
		t.Fatal("nothing published")
	}
	for name, vh := range vhosts(t, res1) {
		if !hasExtHeader(vh) {
			t.Errorf("virtual host %s published without the extension's header", name)
		}
	}
	for _, ref := range []objects.Ref{proxyA, proxyB} {
		if errs, warns := extensionErrors(t, s, ref); len(errs)+len(warns) > 0 {
			t.Errorf("%s: ExtensionError after a good call: %v %v", ref, errs, warns)
		}
	}
	if n, err := testutil.GatherAndCount(s.metrics.registry, "portcullis_extension_hook_calls_total"); err != nil || n == 0 {
		t.Errorf("the runner's metric is not served (%d series, %v)", n, err)
	}

	// Proxy a changes; its virtual host's call fails (b's answer is the
	// cached one).
	failing.Store(true)
	s.rebuild(ctx, extensionObjects(t, "/a2"))
	v2, res2 := published(s)
	if v2 != v1 || res2 != res1 {
		t.Fatalf("published version %s after a failure under Closed, want %s kept", v2, v1)
	}
	if s.buildErr == "" {
		t.Error("no build error reported on /status")
	}
	errs, warns := extensionErrors(t, s, proxyA)
	if len(errs) != 1 || len(warns) != 0 {
		t.Fatalf("HTTPProxy a: ExtensionError errors %v, warnings %v; want one error", errs, warns)
	}
	checkProblem(t, errs[0], "Closed")
	if s.published[proxyA].findings.Valid() {
		t.Error("HTTPProxy a is valid with an ExtensionError")
	}
	if errs, warns := extensionErrors(t, s, proxyB); len(errs)+len(warns) > 0 {
		t.Errorf("HTTPProxy b (its call succeeded): ExtensionError %v %v", errs, warns)
	}

	// The extension recovers: the change is published, the error gone.
	failing.Store(false)
	s.rebuild(ctx, extensionObjects(t, "/a2"))
	v3, res3 := published(s)
	if v3 == v1 {
		t.Fatalf("nothing published after the extension recovered (version %s)", v3)
	}
	vh := vhosts(t, res3)["a.example.com"]
	if !hasExtHeader(vh) || vh.GetRoutes()[0].GetMatch().GetPathSeparatedPrefix() != "/a2" {
		t.Errorf("after recovery, virtual host a.example.com is %v; want the new route with the extension's header", vh)
	}
	if errs, warns := extensionErrors(t, s, proxyA); len(errs)+len(warns) > 0 || s.buildErr != "" {
		t.Errorf("after recovery: ExtensionError %v %v, build error %q", errs, warns, s.buildErr)
	}
}

// Under failurePolicy Open: a failing hook's resources are published
// unmodified, and the objects get an ExtensionError warning (they stay
// valid).
func TestExtensionOpen(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	s := extensionServer(t, headerExtension(t, &failing), extension.FailOpen)

	s.rebuild(t.Context(), extensionObjects(t, "/a"))
	v, res := published(s)
	if v == "" || res == nil {
		t.Fatal("nothing published under Open")
	}
	vs := vhosts(t, res)
	for name, vh := range vs {
		if hasExtHeader(vh) {
			t.Errorf("virtual host %s has the header of a failed call", name)
		}
	}
	if len(vs) != 2 {
		t.Errorf("%d virtual hosts published, want 2", len(vs))
	}
	for _, ref := range []objects.Ref{proxyA, proxyB} {
		errs, warns := extensionErrors(t, s, ref)
		if len(errs) != 0 || len(warns) != 1 {
			t.Fatalf("%s: ExtensionError errors %v, warnings %v; want one warning", ref, errs, warns)
		}
		if !s.published[ref].findings.Valid() {
			t.Errorf("%s is not valid under Open", ref)
		}
		if ref == proxyA {
			checkProblem(t, warns[0], "Open")
		}
	}
}

// An extension registered by ExtensionService is called at the
// ExtensionService's endpoints, followed as they change: without any,
// its calls fail (an ExtensionError under its failure policy); back, it
// heals.
func TestExtensionThroughExtensionService(t *testing.T) {
	var failing atomic.Bool
	addr := headerExtension(t, &failing)
	host, port, _ := strings.Cut(addr, ":")
	objs := func(prefix string, endpoints bool) *objects.Set {
		s := extensionObjects(t, prefix)
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
		if _, err := s.Decode(strings.NewReader(in), "test"); err != nil {
			t.Fatal(err)
		}
		s.Sort()
		return s
	}
	s, err := newServer(Config{
		Pipeline: pipeline.DefaultOptions(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Extensions: []extension.Registration{{Name: "header", Service: "vendor/ext", Hooks: []extension.Hook{extension.HookPostVirtualHostModify},
			Timeout: 2 * time.Second}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ext.close)
	ctx := t.Context()

	s.rebuild(ctx, objs("/a", true))
	_, res := published(s)
	if res == nil || !hasExtHeader(vhosts(t, res)["a.example.com"]) {
		t.Fatal("not published through the ExtensionService's endpoint")
	}

	// The endpoints go: a changed virtual host cannot be sent.
	s.rebuild(ctx, objs("/a2", false))
	if errs, _ := extensionErrors(t, s, proxyA); len(errs) != 1 || !strings.Contains(errs[0].Message, "Unavailable") && !strings.Contains(errs[0].Message, "DeadlineExceeded") {
		t.Fatalf("without endpoints: ExtensionError %v, want one (the call cannot be made)", errs)
	}

	// They come back: it heals.
	s.rebuild(ctx, objs("/a2", true))
	_, res = published(s)
	if vh := vhosts(t, res)["a.example.com"]; !hasExtHeader(vh) || vh.GetRoutes()[0].GetMatch().GetPathSeparatedPrefix() != "/a2" {
		t.Errorf("after the endpoints came back: %v", vh)
	}
	if errs, warns := extensionErrors(t, s, proxyA); len(errs)+len(warns) > 0 {
		t.Errorf("ExtensionError after healing: %v %v", errs, warns)
	}
}

// A build whose hooks failed is made again, without a change of the
// objects: a recovered extension's change is published and its
// ExtensionError goes (here under Open, where nothing else would bring
// the extension's change back).
func TestExtensionFailureIsRetried(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	s := extensionServer(t, headerExtension(t, &failing), extension.FailOpen)
	updates := make(chan *objects.Set, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.loop(ctx, updates, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	updates <- extensionObjects(t, "/a")

	// state is whether virtual host a has the extension's header, and the
	// number of objects with ExtensionError problems, as last published.
	state := func() (bool, int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lastRes == nil {
			return false, -1
		}
		return hasExtHeader(vhosts(t, s.lastRes.Resources)["a.example.com"]), len(s.extProblems)
	}
	wait := func(what string, cond func(header bool, problems int) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			h, n := state()
			if cond(h, n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s (header %v, objects with ExtensionError %d)", what, h, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("published without the extension's change", func(h bool, n int) bool { return !h && n > 0 })
	failing.Store(false)
	wait("the extension's change published after it recovered, without an update",
		func(h bool, n int) bool { return h && n == 0 })
}
