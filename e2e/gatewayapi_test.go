package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

func init() { utilruntime.Must(gwapiv1.Install(harness.Scheme)) }

const (
	// gatewayController is the controller name portcullis serves by default.
	gatewayController = gwapiv1.GatewayController("portcullis.dev/gateway-controller")
	gwNS              = "gateway-e2e"      // the Gateways and most routes
	gwBackendsNS      = "gateway-backends" // a team's Services, and a route the Gateway does not allow
)

// gatewayStack is the API server (with the Gateway API's CRDs), portcullis
// in kubernetes mode and Envoy, whose shared HTTP and HTTPS listeners are
// on the Envoy ports of Gateway listeners on 80 and 443 (8080 and 8443).
type gatewayStack struct {
	*kubeControlPlane
	ca *harness.CA
}

func startGatewayStack(t *testing.T, args ...string) *gatewayStack {
	t.Helper()
	api := harness.StartAPIServer(t, harness.CRDDirs(t)...)
	httpAddr, httpsAddr := gatewayEnvoyAddr(t, 80), gatewayEnvoyAddr(t, 443)
	admin := harness.StartEnvoyAndControlPlaneAt(t, httpAddr, httpsAddr, append([]string{
		"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		// The backends are ExternalName Services for localhost (see
		// harness.LoopbackExternalName): the API server refuses loopback
		// addresses in EndpointSlices.
		"--enable-external-name-services", "--allow-loopback-external-names"}, args...)...)
	return &gatewayStack{
		kubeControlPlane: &kubeControlPlane{api: api, httpAddr: httpAddr, httpsAddr: httpsAddr, admin: admin},
		ca:               harness.NewCA(t, "portcullis-gateway-e2e"),
	}
}

// gatewayEnvoyAddr is the loopback address of the Envoy port a Gateway
// listener on the privileged port p is served on (p + 8000), failing the
// test if another process holds it.
func gatewayEnvoyAddr(t *testing.T, p int) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", p+8000)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("Gateway listeners on port %d are served on %s, which another process holds: %v", p, addr, err)
	}
	l.Close()
	return addr
}

// echoService is a Service for an in-process echo upstream, on port 80.
func echoService(namespace string, e *harness.Echo) []client.Object {
	return harness.LoopbackExternalName(namespace, e.Name, 80, e.Port)
}

// --- object builders ---

func gatewayClass(name string, controller gwapiv1.GatewayController) *gwapiv1.GatewayClass {
	return &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gwapiv1.GatewayClassSpec{ControllerName: controller}}
}

func httpListener(name string, port int, hostname string) gwapiv1.Listener {
	l := gwapiv1.Listener{Name: gwapiv1.SectionName(name), Port: gwapiv1.PortNumber(port), Protocol: gwapiv1.HTTPProtocolType}
	if hostname != "" {
		l.Hostname = ptr.To(gwapiv1.Hostname(hostname))
	}
	return l
}

func httpsListener(name string, port int, hostname, secret string) gwapiv1.Listener {
	l := httpListener(name, port, hostname)
	l.Protocol = gwapiv1.HTTPSProtocolType
	l.TLS = &gwapiv1.ListenerTLSConfig{Mode: ptr.To(gwapiv1.TLSModeTerminate),
		CertificateRefs: []gwapiv1.SecretObjectReference{{Name: gwapiv1.ObjectName(secret)}}}
	return l
}

func gateway(namespace, name, class string, listeners ...gwapiv1.Listener) *gwapiv1.Gateway {
	return &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gwapiv1.GatewaySpec{GatewayClassName: gwapiv1.ObjectName(class), Listeners: listeners}}
}

// parentRef names a Gateway of gwNS, and one of its listeners unless
// section is "".
func parentRef(gw, section string) gwapiv1.ParentReference {
	p := gwapiv1.ParentReference{Namespace: ptr.To(gwapiv1.Namespace(gwNS)), Name: gwapiv1.ObjectName(gw)}
	if section != "" {
		p.SectionName = ptr.To(gwapiv1.SectionName(section))
	}
	return p
}

func hostnames(hs ...string) []gwapiv1.Hostname {
	var out []gwapiv1.Hostname
	for _, h := range hs {
		out = append(out, gwapiv1.Hostname(h))
	}
	return out
}

func httpRoute(namespace, name string, parent gwapiv1.ParentReference, hosts []gwapiv1.Hostname, rules ...gwapiv1.HTTPRouteRule) *gwapiv1.HTTPRoute {
	return &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: gwapiv1.HTTPRouteSpec{
		CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parent}},
		Hostnames:       hosts,
		Rules:           rules,
	}}
}

// backend is a Service's port 80 in namespace ("" for the route's), with
// a weight unless it is 0.
func backend(namespace, service string, weight int32) gwapiv1.HTTPBackendRef {
	r := gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: backendObject(namespace, service)}}
	if weight != 0 {
		r.Weight = ptr.To(weight)
	}
	return r
}

func backendObject(namespace, service string) gwapiv1.BackendObjectReference {
	o := gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(service), Port: ptr.To(gwapiv1.PortNumber(80))}
	if namespace != "" {
		o.Namespace = ptr.To(gwapiv1.Namespace(namespace))
	}
	return o
}

func pathMatch(typ gwapiv1.PathMatchType, value string) gwapiv1.HTTPRouteMatch {
	return gwapiv1.HTTPRouteMatch{Path: &gwapiv1.HTTPPathMatch{Type: ptr.To(typ), Value: ptr.To(value)}}
}

// rule is a rule with the given matches (none: every request) sending to
// service's port 80 in the route's namespace.
func rule(service string, matches ...gwapiv1.HTTPRouteMatch) gwapiv1.HTTPRouteRule {
	return gwapiv1.HTTPRouteRule{Matches: matches, BackendRefs: []gwapiv1.HTTPBackendRef{backend("", service, 0)}}
}

func headers(kv ...string) []gwapiv1.HTTPHeader {
	var out []gwapiv1.HTTPHeader
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, gwapiv1.HTTPHeader{Name: gwapiv1.HTTPHeaderName(kv[i]), Value: kv[i+1]})
	}
	return out
}

// --- requests ---

// answer is one response through Envoy.
type answer struct {
	status int
	header http.Header
	body   string
	echo   *harness.EchoRequest // nil unless an echo upstream answered
}

func (a answer) String() string {
	if a.echo != nil {
		return fmt.Sprintf("%d from %s (path %q, host %q)", a.status, a.echo.Name, a.echo.Path, a.echo.Host)
	}
	return fmt.Sprintf("%d %q", a.status, strings.TrimSpace(a.body))
}

// do sends one request; hdr are header name, value pairs.
func do(c *http.Client, method, url string, hdr ...string) (answer, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return answer{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if e, err := harness.DecodeEcho(b); err == nil && e.Name != "" {
		a.echo = e
	}
	return a, nil
}

// served checks that a is a 200 from the echo upstream named upstream.
func (a answer) served(upstream string) error {
	if a.status != http.StatusOK || a.echo == nil || a.echo.Name != upstream {
		return fmt.Errorf("got %v, want 200 from %s", a, upstream)
	}
	return nil
}

// eventuallyServed retries a request until upstream answers it 200 (the
// configuration has reached Envoy), and returns that answer.
func eventuallyServed(t *testing.T, c *http.Client, upstream, method, url string, hdr ...string) answer {
	t.Helper()
	var a answer
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if a, err = do(c, method, url, hdr...); err != nil {
			return err
		}
		return a.served(upstream)
	})
	return a
}

// eventuallyStatus retries a request until it is answered with status.
func eventuallyStatus(t *testing.T, c *http.Client, status int, method, url string, hdr ...string) answer {
	t.Helper()
	var a answer
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if a, err = do(c, method, url, hdr...); err != nil {
			return err
		}
		if a.status != status {
			return fmt.Errorf("%s %s: got %v, want status %d", method, url, a, status)
		}
		return nil
	})
	return a
}

// --- statuses ---

// cond is an expected condition: type, status and reason.
type cond struct {
	typ    string
	status metav1.ConditionStatus
	reason string
}

func (c cond) String() string { return fmt.Sprintf("%s=%s/%s", c.typ, c.status, c.reason) }

// checkConds checks that cs has each wanted condition, observed at
// generation (unless it is 0).
func checkConds(cs []metav1.Condition, generation int64, want ...cond) error {
	var errs []error
	for _, w := range want {
		i := slices.IndexFunc(cs, func(c metav1.Condition) bool { return c.Type == w.typ })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("no %s condition (have %s)", w.typ, condsString(cs)))
		case cs[i].Status != w.status || cs[i].Reason != w.reason:
			errs = append(errs, fmt.Errorf("%s=%s/%s (%q), want %v", w.typ, cs[i].Status, cs[i].Reason, cs[i].Message, w))
		case generation != 0 && cs[i].ObservedGeneration != generation:
			errs = append(errs, fmt.Errorf("%s observedGeneration %d, want %d", w.typ, cs[i].ObservedGeneration, generation))
		case cs[i].LastTransitionTime.IsZero():
			errs = append(errs, fmt.Errorf("%s has no lastTransitionTime", w.typ))
		}
	}
	return errors.Join(errs...)
}

func condsString(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

var (
	accepted     = cond{"Accepted", metav1.ConditionTrue, "Accepted"}
	programmed   = cond{"Programmed", metav1.ConditionTrue, "Programmed"}
	resolvedRefs = cond{"ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"}
)

// eventuallyObject re-reads obj from the API server until check passes.
func (g *gatewayStack) eventuallyObject(t *testing.T, obj client.Object, check func() error) {
	t.Helper()
	harness.Eventually(t, statusTimeout, func() error {
		if err := g.api.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if err := check(); err != nil {
			return fmt.Errorf("%T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
		return nil
	})
}

// routeParent is the status our controller wrote for a route's parentRef
// to Gateway gw (and listener section, if not "").
func routeParent(parents []gwapiv1.RouteParentStatus, gw, section string) (*gwapiv1.RouteParentStatus, error) {
	var seen []string
	for i, p := range parents {
		sec := ""
		if p.ParentRef.SectionName != nil {
			sec = string(*p.ParentRef.SectionName)
		}
		seen = append(seen, fmt.Sprintf("%s %s/%s", p.ControllerName, p.ParentRef.Name, sec))
		if p.ControllerName == gatewayController && string(p.ParentRef.Name) == gw && sec == section {
			return &parents[i], nil
		}
	}
	return nil, fmt.Errorf("no parent status of %s for %s/%s (parents: %v)", gatewayController, gw, section, seen)
}

// eventuallyHTTPRoute waits until the route's parent status for gw (and
// section) has the wanted conditions, at the route's generation.
func (g *gatewayStack) eventuallyHTTPRoute(t *testing.T, namespace, name, gw, section string, want ...cond) *gwapiv1.HTTPRoute {
	t.Helper()
	r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	g.eventuallyRouteParent(t, r, &r.Status.RouteStatus, gw, section, want...)
	return r
}

// eventuallyGRPCRoute is eventuallyHTTPRoute for a GRPCRoute.
func (g *gatewayStack) eventuallyGRPCRoute(t *testing.T, namespace, name, gw, section string, want ...cond) *gwapiv1.GRPCRoute {
	t.Helper()
	r := &gwapiv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	g.eventuallyRouteParent(t, r, &r.Status.RouteStatus, gw, section, want...)
	return r
}

// eventuallyRouteParent waits until r's parent status (st, read into r)
// for gw and section has the wanted conditions, at r's generation.
func (g *gatewayStack) eventuallyRouteParent(t *testing.T, r client.Object, st *gwapiv1.RouteStatus, gw, section string, want ...cond) {
	t.Helper()
	g.eventuallyObject(t, r, func() error {
		p, err := routeParent(st.Parents, gw, section)
		if err != nil {
			return err
		}
		return checkConds(p.Conditions, r.GetGeneration(), want...)
	})
}

// listenerStatus is a Gateway listener's status.
func listenerStatus(gw *gwapiv1.Gateway, name string) (*gwapiv1.ListenerStatus, error) {
	for i := range gw.Status.Listeners {
		if string(gw.Status.Listeners[i].Name) == name {
			return &gw.Status.Listeners[i], nil
		}
	}
	return nil, fmt.Errorf("no status for listener %q (%d listener statuses)", name, len(gw.Status.Listeners))
}

// TestGatewayAPI runs the Gateway API end to end: GatewayClass, Gateway,
// HTTPRoute, GRPCRoute and ReferenceGrant objects in a real API server,
// portcullis in kubernetes mode, real Envoy and upstreams, and the
// statuses read back. One stack serves every subtest.
func TestGatewayAPI(t *testing.T) {
	start := time.Now()
	g := startGatewayStack(t)
	ctx := context.Background()

	// Upstreams: each answers with its name.
	echoes := map[string]*harness.Echo{}
	for _, name := range []string{"exact", "prefix", "regex", "header", "query", "method", "default",
		"w3", "w1", "filters", "rewrite", "mirror", "secure", "extra", "half"} {
		echoes[name] = harness.StartEcho(t, name)
	}
	remote := harness.StartEcho(t, "remote") // in gwBackendsNS
	grpcA, grpcAAddr := harness.StartGRPCEcho(t, "grpc-a")
	grpcBAddr := startGRPCEchoProcess(t, "grpc-b")
	extraPort := harness.FreePort(t)    // a Gateway listener on its own Envoy listener
	conflictPort := harness.FreePort(t) // two listeners of different protocols

	objs := namespaces(gwNS, gwBackendsNS)
	for _, e := range echoes {
		objs = append(objs, echoService(gwNS, e)...)
	}
	objs = append(objs, echoService(gwBackendsNS, remote)...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "grpc-a", 80, harness.Port(t, grpcAAddr))...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "grpc-b", 80, harness.Port(t, grpcBAddr))...)
	objs = append(objs,
		g.ca.Issue(t, "secure.example.com").Secret(gwNS, "gw-tls"),
		gatewayClass("portcullis", gatewayController),
		gatewayClass("other", "example.com/other-controller"),
		gateway(gwNS, "gw", "portcullis",
			httpListener("http", 80, ""),
			httpsListener("https", 443, "secure.example.com", "gw-tls"),
			httpListener("extra", extraPort, "extra.example.com")),
		// Not ours: neither served nor given a status.
		gateway(gwNS, "foreign", "other", httpListener("http", 80, "")),
		// Ours, with a listener whose certificate does not exist.
		gateway(gwNS, "broken-tls", "portcullis", httpsListener("https", 443, "broken.example.com", "no-such-secret")),
		// Conflicts: a host an HTTPProxy serves on the shared HTTP
		// listener; HTTP and HTTPS on one port.
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "proxy"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "proxy.example.com"},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "default", Port: 80}}}}}},
		gateway(gwNS, "conflicts", "portcullis",
			httpListener("proxy-host", 80, "proxy.example.com"),
			httpListener("plain", conflictPort, "")),
		gateway(gwNS, "conflicts-tls", "portcullis", httpsListener("tls", conflictPort, "secure.example.com", "gw-tls")),
		httpRoute(gwNS, "proxy-claim", parentRef("conflicts", "proxy-host"), nil, rule("exact")),
	)
	objs = append(objs, gatewayRoutes()...)
	objs = append(objs, grpcRoutes()...)
	g.apply(t, objs...)

	http1 := harness.HTTPClient(g.httpAddr)

	t.Run("HTTPRoute matches: path (Exact, PathPrefix, RegularExpression), header, query parameter, method, and their precedence", func(t *testing.T) {
		eventuallyServed(t, http1, "exact", "GET", "http://match.example.com/exact")
		for _, c := range []struct {
			method, path string
			hdr          []string
			want         string
		}{
			{"GET", "/exact", nil, "exact"},
			{"GET", "/exact/more", nil, "default"}, // Exact is the whole path
			{"GET", "/prefix", nil, "prefix"},
			{"GET", "/prefix/", nil, "prefix"},
			{"GET", "/prefix/a/b", nil, "prefix"},
			{"GET", "/prefixed", nil, "default"}, // PathPrefix matches whole path segments
			{"GET", "/regex/42", nil, "regex"},
			{"GET", "/regex/4x", nil, "default"},      // the expression must match
			{"GET", "/regex/42/more", nil, "default"}, // ... the whole path
			{"GET", "/", []string{"X-Variant", "canary"}, "header"},
			{"GET", "/", []string{"X-Variant", "stable"}, "default"},
			{"GET", "/?version=2", nil, "query"},
			{"GET", "/?version=3", nil, "default"},
			{"POST", "/", nil, "method"},
			{"DELETE", "/", nil, "default"},
			// Precedence between rules (the Gateway API's order): an
			// exact path, then the longest prefix, then a method, then
			// more header matches, then more query parameter matches.
			{"POST", "/exact", nil, "exact"},
			{"GET", "/prefix/x", []string{"X-Variant", "canary"}, "prefix"},
			{"POST", "/?version=2", []string{"X-Variant", "canary"}, "method"},
			{"GET", "/?version=2", []string{"X-Variant", "canary"}, "header"},
		} {
			a, err := do(http1, c.method, "http://match.example.com"+c.path, c.hdr...)
			if err == nil {
				err = a.served(c.want)
			}
			if err != nil {
				t.Errorf("%s %s %v: %v", c.method, c.path, c.hdr, err)
			}
		}
	})

	t.Run("weighted backends 3:1", func(t *testing.T) {
		eventuallyServed(t, http1, "w1", "GET", "http://weights.example.com/")
		const n = 400
		counts := map[string]int{}
		for range n {
			a, err := do(http1, "GET", "http://weights.example.com/")
			if err != nil {
				t.Fatal(err)
			}
			if a.status != 200 || a.echo == nil {
				t.Fatalf("weighted route: %v", a)
			}
			counts[a.echo.Name]++
		}
		// Expected 300 of 400 for w3 (standard deviation 8.7): ±40 is
		// more than 4.5 standard deviations.
		share := float64(counts["w3"]) / n
		t.Logf("w3 %d, w1 %d of %d (w3 share %.3f, want 0.75 ± 0.10)", counts["w3"], counts["w1"], n, share)
		if counts["w3"]+counts["w1"] != n || share < 0.65 || share > 0.85 {
			t.Errorf("split %v over %d requests: w3 share %.3f, want 0.75 ± 0.10", counts, n, share)
		}
	})

	t.Run("RequestRedirect: Location and status", func(t *testing.T) {
		a := eventuallyStatus(t, http1, http.StatusMovedPermanently, "GET", "http://filters.example.com/redirect")
		if got, want := a.header.Get("Location"), "https://redirected.example.com/new"; got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
		a, err := do(http1, "GET", "http://filters.example.com/old/page")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.header.Get("Location"), "http://filters.example.com/new-prefix/page"; a.status != http.StatusFound || got != want {
			t.Errorf("prefix redirect: %v, Location %q; want 302 to %q", a, got, want)
		}
		a, err = do(http1, "GET", "http://filters.example.com/moved")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.header.Get("Location"), "https://filters.example.com:8443/moved"; a.status != http.StatusFound || got != want {
			t.Errorf("scheme and port redirect: %v, Location %q; want 302 to %q", a, got, want)
		}
		if n := echoes["filters"].Requests(); n != 0 {
			t.Errorf("the filters upstream got %d requests: a redirect must not reach a backend", n)
		}
	})

	t.Run("URLRewrite: the backend sees the rewritten host and path", func(t *testing.T) {
		a := eventuallyServed(t, http1, "rewrite", "GET", "http://filters.example.com/rewrite/items?x=1")
		if a.echo.Host != "rewritten.example.com" || a.echo.Path != "/v2/items" || a.echo.Query != "x=1" {
			t.Errorf("upstream saw host %q path %q query %q, want rewritten.example.com /v2/items x=1", a.echo.Host, a.echo.Path, a.echo.Query)
		}
		for _, c := range []struct{ path, wantPath, wantHost string }{
			{"/rewrite", "/v2", "rewritten.example.com"},
			{"/strip/three", "/three", "filters.example.com"}, // a prefix replaced by "/" leaves no double slash
			{"/strip", "/", "filters.example.com"},
			{"/full/a/b?q=on", "/replaced", "filters.example.com"},
		} {
			a, err := do(http1, "GET", "http://filters.example.com"+c.path)
			if err == nil {
				err = a.served("rewrite")
			}
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
				continue
			}
			if a.echo.Path != c.wantPath || a.echo.Host != c.wantHost {
				t.Errorf("%s: upstream saw path %q host %q, want %q %q", c.path, a.echo.Path, a.echo.Host, c.wantPath, c.wantHost)
			}
		}
	})

	t.Run("RequestHeaderModifier and ResponseHeaderModifier", func(t *testing.T) {
		a := eventuallyServed(t, http1, "filters", "GET", "http://filters.example.com/headers",
			"X-Set", "from-client", "X-Add", "from-client", "X-Remove", "from-client")
		if got := a.echo.Headers.Values("X-Set"); !slices.Equal(got, []string{"set-value"}) {
			t.Errorf("upstream saw X-Set %q, want only set-value", got)
		}
		if got := a.echo.Headers.Values("X-Add"); !slices.Equal(got, []string{"from-client", "added"}) {
			t.Errorf("upstream saw X-Add %q, want from-client and added", got)
		}
		if got := a.echo.Headers.Values("X-Remove"); len(got) != 0 {
			t.Errorf("upstream saw X-Remove %q, want it removed", got)
		}
		if err := harness.WantHeaders(a.header, map[string]string{"X-Response-Set": "yes", "X-Response-Add": "added", "Content-Type": ""}); err != nil {
			t.Errorf("response headers: %v", err)
		}
	})

	t.Run("RequestMirror: the mirror backend receives a copy", func(t *testing.T) {
		mirror := echoes["mirror"]
		eventuallyServed(t, http1, "filters", "GET", "http://filters.example.com/mirror/copy-me")
		// The copy is sent asynchronously, its answer ignored.
		harness.Eventually(t, 10*time.Second, func() error {
			last := mirror.LastRequest()
			if last == nil || last.Path != "/mirror/copy-me" {
				return fmt.Errorf("mirror got %d requests, last %+v; want /mirror/copy-me", mirror.Requests(), last)
			}
			return nil
		})
	})

	t.Run("HTTPS listener: certificate from the Secret, routes by SNI host, port 443 on 8443", func(t *testing.T) {
		https := harness.HTTPSClient(g.ca.CertPEM, g.httpsAddr)
		a := eventuallyServed(t, https, "secure", "GET", "https://secure.example.com/anything")
		if a.echo.Host != "secure.example.com" {
			t.Errorf("upstream saw host %q", a.echo.Host)
		}
		// Attached only to the HTTPS listener.
		if a, err := do(http1, "GET", "http://secure.example.com/anything"); err != nil || a.status != http.StatusNotFound {
			t.Errorf("secure.example.com over HTTP: %v (%v), want 404", a, err)
		}
	})

	t.Run("a Gateway listener on an unprivileged port gets its own Envoy listener", func(t *testing.T) {
		extra := harness.HTTPClient(fmt.Sprintf("127.0.0.1:%d", extraPort))
		eventuallyServed(t, extra, "extra", "GET", "http://extra.example.com/x")
		if a, err := do(http1, "GET", "http://extra.example.com/x"); err != nil || a.status != http.StatusNotFound {
			t.Errorf("extra.example.com on the port 80 listener: %v (%v), want 404", a, err)
		}
	})

	t.Run("an invalid backend answers 500 for its share of the traffic", func(t *testing.T) {
		g.eventuallyHTTPRoute(t, gwNS, "half", "gw", "http", accepted, cond{"ResolvedRefs", metav1.ConditionFalse, string(gwapiv1.RouteReasonBackendNotFound)})
		eventuallyServed(t, http1, "half", "GET", "http://half.example.com/")
		const n = 100
		errs := 0
		for range n {
			a, err := do(http1, "GET", "http://half.example.com/")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case a.status == http.StatusInternalServerError:
				errs++
			case a.served("half") != nil:
				t.Fatalf("half route: %v", a)
			}
		}
		t.Logf("%d of %d answered 500", errs, n)
		if errs < 30 || errs > 70 {
			t.Errorf("%d of %d requests answered 500, want about half (30-70)", errs, n)
		}
	})

	t.Run("statuses: GatewayClass, Gateway and listeners, routes", func(t *testing.T) {
		gc := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}}
		g.eventuallyObject(t, gc, func() error { return checkConds(gc.Status.Conditions, gc.Generation, accepted) })

		gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "gw"}}
		wantAttached := map[string]int32{"http": 6, "https": 1, "extra": 1}
		g.eventuallyObject(t, gw, func() error {
			errs := []error{checkConds(gw.Status.Conditions, gw.Generation, accepted, programmed)}
			if len(gw.Status.Listeners) != 3 {
				errs = append(errs, fmt.Errorf("%d listener statuses, want 3", len(gw.Status.Listeners)))
			}
			for name, n := range wantAttached {
				l, err := listenerStatus(gw, name)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if l.AttachedRoutes != n {
					errs = append(errs, fmt.Errorf("listener %s: attachedRoutes %d, want %d", name, l.AttachedRoutes, n))
				}
				if err := checkConds(l.Conditions, gw.Generation, accepted, programmed, resolvedRefs); err != nil {
					errs = append(errs, fmt.Errorf("listener %s: %w", name, err))
				}
				var kinds []string
				for _, k := range l.SupportedKinds {
					kinds = append(kinds, string(k.Kind))
				}
				slices.Sort(kinds)
				if !slices.Equal(kinds, []string{"GRPCRoute", "HTTPRoute"}) {
					errs = append(errs, fmt.Errorf("listener %s: supportedKinds %v, want GRPCRoute and HTTPRoute", name, kinds))
				}
			}
			return errors.Join(errs...)
		})

		for _, r := range []struct{ name, section string }{
			{"match", "http"}, {"weights", "http"}, {"filters", "http"}, {"secure", "https"}, {"extra", "extra"},
		} {
			g.eventuallyHTTPRoute(t, gwNS, r.name, "gw", r.section, accepted, resolvedRefs)
		}
		g.eventuallyGRPCRoute(t, gwNS, "grpc", "gw", "http", accepted, resolvedRefs)

		// Refused attachments.
		g.eventuallyHTTPRoute(t, gwNS, "mismatch", "gw", "extra", cond{"Accepted", metav1.ConditionFalse, string(gwapiv1.RouteReasonNoMatchingListenerHostname)})
		g.eventuallyHTTPRoute(t, gwNS, "nosection", "gw", "nope", cond{"Accepted", metav1.ConditionFalse, string(gwapiv1.RouteReasonNoMatchingParent)})
		g.eventuallyHTTPRoute(t, gwBackendsNS, "outsider", "gw", "http", cond{"Accepted", metav1.ConditionFalse, string(gwapiv1.RouteReasonNotAllowedByListeners)})
		for _, host := range []string{"outsider.example.com", "mismatch.example.org"} {
			if a, err := do(http1, "GET", "http://"+host+"/"); err != nil || a.status != http.StatusNotFound {
				t.Errorf("%s, of a route not accepted: %v (%v), want 404", host, a, err)
			}
		}

		// A listener whose certificate Secret does not exist.
		broken := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "broken-tls"}}
		g.eventuallyObject(t, broken, func() error {
			l, err := listenerStatus(broken, "https")
			if err != nil {
				return err
			}
			if err := checkConds(l.Conditions, broken.Generation, cond{"ResolvedRefs", metav1.ConditionFalse, string(gwapiv1.ListenerReasonInvalidCertificateRef)}); err != nil {
				return err
			}
			if c := findCond(l.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("listener https Programmed %v, want False", c)
			}
			return nil
		})

		// Not ours: the GatewayClass and Gateway keep the API server's
		// defaults (Pending), the route has no parent status from us, and
		// nothing is served. Our statuses above were written by now.
		other := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
		foreign := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "foreign"}}
		foreignRoute := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "foreign"}}
		for _, o := range []client.Object{other, foreign, foreignRoute} {
			if err := g.api.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
		}
		if c := findCond(other.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionUnknown {
			t.Errorf("GatewayClass of another controller: Accepted %+v, want the API server's default (Unknown)", c)
		}
		if c := findCond(foreign.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionUnknown {
			t.Errorf("Gateway of another controller's class: Accepted %+v, want the API server's default (Unknown)", c)
		}
		for _, p := range foreignRoute.Status.Parents {
			if p.ControllerName == gatewayController {
				t.Errorf("route of another controller's Gateway has our parent status %+v", p)
			}
		}
		if a, err := do(http1, "GET", "http://foreign.example.com/"); err != nil || a.status != http.StatusNotFound {
			t.Errorf("foreign.example.com, on a Gateway not ours: %v (%v), want 404", a, err)
		}
	})

	t.Run("listener conflicts: a host an HTTPProxy serves, two protocols on one port", func(t *testing.T) {
		conflicted := func(reason gwapiv1.ListenerConditionReason) cond {
			return cond{"Conflicted", metav1.ConditionTrue, string(reason)}
		}
		for _, c := range []struct {
			gateway, listener string
			want              cond
		}{
			{"conflicts", "proxy-host", conflicted(gwapiv1.ListenerReasonHostnameConflict)},
			{"conflicts", "plain", conflicted(gwapiv1.ListenerReasonProtocolConflict)},
			{"conflicts-tls", "tls", conflicted(gwapiv1.ListenerReasonProtocolConflict)},
		} {
			gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: c.gateway}}
			g.eventuallyObject(t, gw, func() error {
				l, err := listenerStatus(gw, c.listener)
				if err != nil {
					return err
				}
				if err := checkConds(l.Conditions, gw.Generation, c.want); err != nil {
					return fmt.Errorf("listener %s: %w", c.listener, err)
				}
				if p := findCond(l.Conditions, "Programmed"); p == nil || p.Status != metav1.ConditionFalse {
					return fmt.Errorf("listener %s: Programmed %+v, want False", c.listener, p)
				}
				return nil
			})
		}
		// The gw Gateway's listeners are not in conflict.
		gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "gw"}}
		g.eventuallyObject(t, gw, func() error {
			l, err := listenerStatus(gw, "http")
			if err != nil {
				return err
			}
			return checkConds(l.Conditions, gw.Generation, cond{"Conflicted", metav1.ConditionFalse, string(gwapiv1.ListenerReasonNoConflicts)})
		})
		// The HTTPProxy keeps its host: the route on the conflicted
		// listener does not take it.
		g.eventuallyProxy(t, gwNS, "proxy", want{status: metav1.ConditionTrue, reason: "Valid"})
		eventuallyServed(t, http1, "default", "GET", "http://proxy.example.com/exact")
		// Neither protocol is served on the contested port.
		if a, err := do(harness.HTTPClient(fmt.Sprintf("127.0.0.1:%d", conflictPort)), "GET", "http://any.example.com/"); err == nil {
			t.Errorf("port %d, claimed by HTTP and HTTPS listeners, answered %v; want nothing listening", conflictPort, a)
		}
	})

	t.Run("GRPCRoute to a gRPC backend", func(t *testing.T) {
		runGRPCRouteScenario(t, g.httpAddr, grpcA)
	})

	t.Run("cross-namespace backendRef: refused without a ReferenceGrant, served with it", func(t *testing.T) {
		refNotPermitted := cond{"ResolvedRefs", metav1.ConditionFalse, string(gwapiv1.RouteReasonRefNotPermitted)}
		g.eventuallyHTTPRoute(t, gwNS, "cross", "gw", "http", accepted, refNotPermitted)
		eventuallyStatus(t, http1, http.StatusInternalServerError, "GET", "http://cross.example.com/")
		if n := remote.Requests(); n != 0 {
			t.Fatalf("the other namespace's Service got %d requests without a ReferenceGrant", n)
		}

		grant := &gwapiv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: gwBackendsNS, Name: "routes-of-gateway-e2e"},
			Spec: gwapiv1.ReferenceGrantSpec{
				From: []gwapiv1.ReferenceGrantFrom{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Namespace: gwNS}},
				To:   []gwapiv1.ReferenceGrantTo{{Group: "", Kind: "Service", Name: ptr.To(gwapiv1.ObjectName("remote"))}},
			}}
		g.apply(t, grant)
		g.eventuallyHTTPRoute(t, gwNS, "cross", "gw", "http", accepted, resolvedRefs)
		eventuallyServed(t, http1, "remote", "GET", "http://cross.example.com/")

		// And refused again once the grant goes.
		if err := g.api.Delete(ctx, grant); err != nil {
			t.Fatal(err)
		}
		g.eventuallyHTTPRoute(t, gwNS, "cross", "gw", "http", accepted, refNotPermitted)
		eventuallyStatus(t, http1, http.StatusInternalServerError, "GET", "http://cross.example.com/")
	})

	t.Run("a route change reaches Envoy and its status follows the generation", func(t *testing.T) {
		r := &gwapiv1.HTTPRoute{}
		if err := g.api.Client.Get(ctx, client.ObjectKey{Namespace: gwNS, Name: "weights"}, r); err != nil {
			t.Fatal(err)
		}
		r.Spec.Rules = []gwapiv1.HTTPRouteRule{rule("w3")}
		g.apply(t, r)
		g.eventuallyHTTPRoute(t, gwNS, "weights", "gw", "http", accepted, resolvedRefs)
		harness.Eventually(t, 30*time.Second, func() error {
			for range 20 {
				a, err := do(http1, "GET", "http://weights.example.com/")
				if err != nil {
					return err
				}
				if err := a.served("w3"); err != nil {
					return err
				}
			}
			return nil
		})
	})

	t.Logf("TestGatewayAPI took %v", time.Since(start).Round(time.Millisecond))
}

func findCond(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// gatewayRoutes are the HTTPRoutes of TestGatewayAPI.
func gatewayRoutes() []client.Object {
	onHTTP := parentRef("gw", "http")
	post := gwapiv1.HTTPMethodPost
	match := httpRoute(gwNS, "match", onHTTP, hostnames("match.example.com"),
		rule("exact", pathMatch(gwapiv1.PathMatchExact, "/exact")),
		rule("prefix", pathMatch(gwapiv1.PathMatchPathPrefix, "/prefix")),
		rule("regex", pathMatch(gwapiv1.PathMatchRegularExpression, "/regex/[0-9]+")),
		rule("header", gwapiv1.HTTPRouteMatch{Headers: []gwapiv1.HTTPHeaderMatch{{Name: "X-Variant", Value: "canary"}}}),
		rule("query", gwapiv1.HTTPRouteMatch{QueryParams: []gwapiv1.HTTPQueryParamMatch{{Name: "version", Value: "2"}}}),
		rule("method", gwapiv1.HTTPRouteMatch{Method: &post}),
		rule("default"),
	)
	weights := httpRoute(gwNS, "weights", onHTTP, hostnames("weights.example.com"),
		gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{backend("", "w3", 3), backend("", "w1", 1)}})

	filter := func(f gwapiv1.HTTPRouteFilter, service string, m gwapiv1.HTTPRouteMatch) gwapiv1.HTTPRouteRule {
		r := gwapiv1.HTTPRouteRule{Matches: []gwapiv1.HTTPRouteMatch{m}, Filters: []gwapiv1.HTTPRouteFilter{f}}
		if service != "" {
			r.BackendRefs = []gwapiv1.HTTPBackendRef{backend("", service, 0)}
		}
		return r
	}
	redirect := func(r gwapiv1.HTTPRequestRedirectFilter) gwapiv1.HTTPRouteFilter {
		return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &r}
	}
	rewrite := func(r gwapiv1.HTTPURLRewriteFilter) gwapiv1.HTTPRouteFilter {
		return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterURLRewrite, URLRewrite: &r}
	}
	prefix := func(p string) gwapiv1.HTTPRouteMatch { return pathMatch(gwapiv1.PathMatchPathPrefix, p) }
	replacePrefix := func(p string) *gwapiv1.HTTPPathModifier {
		return &gwapiv1.HTTPPathModifier{Type: gwapiv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(p)}
	}
	replaceFull := func(p string) *gwapiv1.HTTPPathModifier {
		return &gwapiv1.HTTPPathModifier{Type: gwapiv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(p)}
	}
	headersRule := gwapiv1.HTTPRouteRule{
		Matches: []gwapiv1.HTTPRouteMatch{prefix("/headers")},
		Filters: []gwapiv1.HTTPRouteFilter{
			{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwapiv1.HTTPHeaderFilter{
				Set: headers("X-Set", "set-value"), Add: headers("X-Add", "added"), Remove: []string{"X-Remove"}}},
			{Type: gwapiv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwapiv1.HTTPHeaderFilter{
				Set: headers("X-Response-Set", "yes"), Add: headers("X-Response-Add", "added"), Remove: []string{"Content-Type"}}},
		},
		BackendRefs: []gwapiv1.HTTPBackendRef{backend("", "filters", 0)},
	}
	filters := httpRoute(gwNS, "filters", onHTTP, hostnames("filters.example.com"),
		filter(redirect(gwapiv1.HTTPRequestRedirectFilter{Scheme: ptr.To("https"), Hostname: ptr.To(gwapiv1.PreciseHostname("redirected.example.com")),
			Path: replaceFull("/new"), StatusCode: ptr.To(301)}), "", pathMatch(gwapiv1.PathMatchExact, "/redirect")),
		filter(redirect(gwapiv1.HTTPRequestRedirectFilter{Path: replacePrefix("/new-prefix")}), "", prefix("/old")),
		filter(redirect(gwapiv1.HTTPRequestRedirectFilter{Scheme: ptr.To("https"), Port: ptr.To(gwapiv1.PortNumber(8443))}), "", prefix("/moved")),
		filter(rewrite(gwapiv1.HTTPURLRewriteFilter{Hostname: ptr.To(gwapiv1.PreciseHostname("rewritten.example.com")), Path: replacePrefix("/v2")}), "rewrite", prefix("/rewrite")),
		filter(rewrite(gwapiv1.HTTPURLRewriteFilter{Path: replacePrefix("/")}), "rewrite", prefix("/strip")),
		filter(rewrite(gwapiv1.HTTPURLRewriteFilter{Path: replaceFull("/replaced")}), "rewrite", prefix("/full")),
		headersRule,
		filter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestMirror,
			RequestMirror: &gwapiv1.HTTPRequestMirrorFilter{BackendRef: backendObject("", "mirror")}}, "filters", prefix("/mirror")),
	)
	return []client.Object{
		match, weights, filters,
		// No hostnames: the listener's (secure.example.com).
		httpRoute(gwNS, "secure", parentRef("gw", "https"), nil, rule("secure")),
		httpRoute(gwNS, "extra", parentRef("gw", "extra"), nil, rule("extra")),
		// Half to a valid backend, half to a Service that does not exist.
		httpRoute(gwNS, "half", onHTTP, hostnames("half.example.com"),
			gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{backend("", "half", 1), backend("", "no-such-service", 1)}}),
		httpRoute(gwNS, "cross", onHTTP, hostnames("cross.example.com"),
			gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{backend(gwBackendsNS, "remote", 0)}}),
		// Refused: no host in common with the listener; no such listener;
		// a namespace the listener does not allow (allowedRoutes: Same).
		httpRoute(gwNS, "mismatch", parentRef("gw", "extra"), hostnames("mismatch.example.org"), rule("extra")),
		httpRoute(gwNS, "nosection", parentRef("gw", "nope"), hostnames("nosection.example.com"), rule("default")),
		httpRoute(gwBackendsNS, "outsider", onHTTP, hostnames("outsider.example.com"), rule("remote")),
		// On a Gateway whose class is another controller's.
		httpRoute(gwNS, "foreign", parentRef("foreign", ""), hostnames("foreign.example.com"), rule("default")),
	}
}
