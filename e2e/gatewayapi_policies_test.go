package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

func init() { utilruntime.Must(gatewayv1alpha1.AddToScheme(harness.Scheme)) }

// testserver context keys (authserver/README.md): a deny status, and what
// the testserver forwards as Auth-Context-* headers.
const denyKey = "testserver.portcullis.dev/deny"

// policyTarget is a targetRef to an HTTPRoute of the policy's namespace,
// and one of its rules unless rule is "".
func policyTarget(route, rule string) gwapiv1.LocalPolicyTargetReferenceWithSectionName {
	r := gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: gwapiv1.ObjectName(route)}}
	if rule != "" {
		r.SectionName = ptr.To(gwapiv1.SectionName(rule))
	}
	return r
}

// extAuthPolicy is an ExtAuthPolicy of gwNS using ExtensionService ext
// with the given context, on targets.
func extAuthPolicy(name, ext string, context map[string]string, targets ...gwapiv1.LocalPolicyTargetReferenceWithSectionName) *gatewayv1alpha1.ExtAuthPolicy {
	return &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: name}, Spec: gatewayv1alpha1.ExtAuthPolicySpec{
		TargetRefs:          targets,
		ExtensionServiceRef: &contourv1.ExtensionServiceReference{Name: ext},
		ResponseTimeout:     "2s",
		AuthPolicy:          &contourv1.AuthorizationPolicy{Context: context},
	}}
}

// namedRule is rule with a name, so that a policy can target it.
func namedRule(name, service string, matches ...gwapiv1.HTTPRouteMatch) gwapiv1.HTTPRouteRule {
	r := rule(service, matches...)
	r.Name = ptr.To(gwapiv1.SectionName(name))
	return r
}

// policyAncestor is the status our controller wrote for a policy's target
// (an HTTPRoute of gwNS, and a rule unless section is "").
func policyAncestor(st *gwapiv1.PolicyStatus, route, section string) (*gwapiv1.PolicyAncestorStatus, error) {
	var seen []string
	for i, a := range st.Ancestors {
		sec := ""
		if a.AncestorRef.SectionName != nil {
			sec = string(*a.AncestorRef.SectionName)
		}
		kind := ""
		if a.AncestorRef.Kind != nil {
			kind = string(*a.AncestorRef.Kind)
		}
		group := ""
		if a.AncestorRef.Group != nil {
			group = string(*a.AncestorRef.Group)
		}
		seen = append(seen, fmt.Sprintf("%s %s/%s %s/%s", a.ControllerName, group, kind, a.AncestorRef.Name, sec))
		if a.ControllerName == gatewayController && group == gwapiv1.GroupName && kind == "HTTPRoute" &&
			string(a.AncestorRef.Name) == route && sec == section {
			return &st.Ancestors[i], nil
		}
	}
	return nil, fmt.Errorf("no ancestor status of %s for HTTPRoute %s/%s (ancestors: %v)", gatewayController, route, section, seen)
}

// eventuallyPolicy waits until policy (an ExtAuthPolicy or ExtProcPolicy)
// has, for the target route (and rule section), the wanted Accepted
// condition at its generation; it returns the condition.
func (g *gatewayStack) eventuallyPolicy(t *testing.T, policy client.Object, route, section string, want cond) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	g.eventuallyObject(t, policy, func() error {
		var st *gwapiv1.PolicyStatus
		switch p := policy.(type) {
		case *gatewayv1alpha1.ExtAuthPolicy:
			st = &p.Status
		case *gatewayv1alpha1.ExtProcPolicy:
			st = &p.Status
		default:
			return fmt.Errorf("not a policy: %T", policy)
		}
		a, err := policyAncestor(st, route, section)
		if err != nil {
			return err
		}
		if err := checkConds(a.Conditions, policy.GetGeneration(), want); err != nil {
			return err
		}
		got = *findCond(a.Conditions, want.typ)
		return nil
	})
	return got
}

// TestGatewayAPIPolicies runs ExtAuthPolicy and ExtProcPolicy end to end:
// the policies, Gateway and HTTPRoutes in a real API server, portcullis in
// kubernetes mode, real Envoy, a real authserver testserver and a real
// extprocserver behind ExtensionServices, and the policies' statuses read
// back. It uses the Gateway API stack of TestGatewayAPI (Envoy's shared
// listeners on 127.0.0.1:8080 and 8443); neither test is parallel, so
// they never hold those ports at the same time.
func TestGatewayAPIPolicies(t *testing.T) {
	start := time.Now()
	g := startGatewayStack(t)
	ctx := context.Background()

	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	authAddr, authMetricsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	harness.StartProcess(t, "authserver", authserver, "testserver", "--address", authAddr, "--metrics-address", authMetricsAddr)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err := harness.WaitHTTP(waitCtx, "http://"+authMetricsAddr+"/healthz", 200)
	cancel()
	if err != nil {
		t.Fatalf("authserver testserver not healthy: %v", err)
	}
	authMetrics := "http://" + authMetricsAddr + "/metrics"
	proc := harness.StartExtProcServer(t, markingProcessor("policy"))

	echoes := map[string]*harness.Echo{}
	for _, name := range []string{"checked", "denied", "open", "rules", "processed", "broken", "contested"} {
		echoes[name] = harness.StartEcho(t, name)
	}

	h2c := "h2c"
	extensionService := func(name, service string, port int) *v1alpha1.ExtensionService {
		return &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: name},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: service, Port: port}}}}
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gwNS}}}
	for _, e := range echoes {
		objs = append(objs, echoService(gwNS, e)...)
	}
	objs = append(objs, harness.LoopbackExternalName(gwNS, "authserver", 9443, harness.Port(t, authAddr))...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "extprocserver", 9000, harness.Port(t, proc.Addr))...)
	onHTTP := parentRef("gw", "http")
	route := func(name string, rules ...gwapiv1.HTTPRouteRule) *gwapiv1.HTTPRoute {
		return httpRoute(gwNS, name, onHTTP, hostnames(name+".example.com"), rules...)
	}
	prefix := func(p string) gwapiv1.HTTPRouteMatch { return pathMatch(gwapiv1.PathMatchPathPrefix, p) }

	checkedAuth := extAuthPolicy("checked-auth", "auth", map[string]string{"route": "checked"}, policyTarget("checked", ""))
	deniedAuth := extAuthPolicy("denied-auth", "auth", map[string]string{denyKey: "401"}, policyTarget("denied", ""))
	rulesAuth := extAuthPolicy("rules-auth", "auth", map[string]string{"level": "route", "scope": "route"}, policyTarget("rules", ""))
	adminAuth := extAuthPolicy("rules-admin-auth", "auth", map[string]string{denyKey: "403"}, policyTarget("rules", "admin"))
	specialAuth := extAuthPolicy("rules-special-auth", "auth", map[string]string{"level": "rule"}, policyTarget("rules", "special"))
	healthNoAuth := &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "rules-health-no-auth"},
		Spec: gatewayv1alpha1.ExtAuthPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{policyTarget("rules", "health")}, Disabled: true}}
	missingAuth := extAuthPolicy("missing-auth", "late-auth", map[string]string{"route": "broken"}, policyTarget("broken", ""))
	processing := &gatewayv1alpha1.ExtProcPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "processing"}, Spec: gatewayv1alpha1.ExtProcPolicySpec{
		TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{policyTarget("processed", "")},
		Processor: &contourv1.ExtProc{
			GRPCService:    &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "proc"}, ResponseTimeout: "5s"},
			ProcessingMode: &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSend},
		},
	}}
	// The older of two policies on one target wins. Its name sorts after
	// the newer one's, so that only the creation time can make it win.
	older := extAuthPolicy("z-older", "auth", map[string]string{"winner": "older"}, policyTarget("contested", ""))
	newer := extAuthPolicy("a-newer", "auth", map[string]string{"winner": "newer", denyKey: "403"}, policyTarget("contested", ""))

	objs = append(objs,
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		extensionService("auth", "authserver", 9443),
		extensionService("proc", "extprocserver", 9000),
		route("checked", rule("checked")),
		route("denied", rule("denied")),
		route("open", rule("open")),
		route("rules",
			namedRule("default", "rules"),
			namedRule("admin", "rules", prefix("/admin")),
			namedRule("special", "rules", prefix("/special")),
			namedRule("health", "rules", prefix("/health"))),
		route("processed", rule("processed")),
		route("broken", rule("broken")),
		route("contested", rule("contested")),
		checkedAuth, deniedAuth, rulesAuth, adminAuth, specialAuth, healthNoAuth, missingAuth, processing, older,
	)
	g.apply(t, objs...)
	// The newer policy is created in a later second than the older one
	// (creation times have a resolution of one second).
	time.Sleep(1100 * time.Millisecond)
	g.apply(t, newer)

	http1 := harness.HTTPClient(g.httpAddr)

	// authorized waits until url is served by upstream after a check by
	// the testserver with exactly the wanted Auth-Context-* headers (key:
	// value; "" for absent), and returns the answer.
	authorized := func(t *testing.T, upstream, url string, wantContext map[string]string) answer {
		t.Helper()
		var a answer
		harness.Eventually(t, 30*time.Second, func() error {
			var err error
			// A client's own Auth-Handler never reaches the upstream: the
			// testserver overwrites it.
			if a, err = do(http1, "GET", url, "Auth-Handler", "forged"); err != nil {
				return err
			}
			if err := a.served(upstream); err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			want := map[string]string{"Auth-Handler": "testserver"}
			for k, v := range wantContext {
				want["Auth-Context-"+k] = v
			}
			if err := harness.WantHeaders(a.echo.Headers, want); err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			return nil
		})
		return a
	}
	// notChecked checks that url is served by upstream without a check:
	// no Auth-Handler header, and the testserver's count of checks does
	// not move.
	notChecked := func(t *testing.T, upstream, url string) {
		t.Helper()
		eventuallyServed(t, http1, upstream, "GET", url)
		before := harness.AuthChecks(t, authMetrics)
		for range 5 {
			a, err := do(http1, "GET", url)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.served(upstream); err != nil {
				t.Fatalf("%s: %v", url, err)
			}
			if h := a.echo.Headers.Get("Auth-Handler"); h != "" {
				t.Errorf("%s: upstream saw Auth-Handler %q on a route without authorization", url, h)
			}
		}
		if after := harness.AuthChecks(t, authMetrics); after != before {
			t.Errorf("%s: the testserver answered %d checks for a route without authorization", url, after-before)
		}
	}

	t.Run("ExtAuthPolicy on an HTTPRoute: its requests are checked, another route of the Gateway is not", func(t *testing.T) {
		before := harness.AuthChecks(t, authMetrics)
		authorized(t, "checked", "http://checked.example.com/", map[string]string{"Route": "checked"})
		if after := harness.AuthChecks(t, authMetrics); after <= before {
			t.Errorf("the testserver's checks went from %d to %d: the route's requests were not checked", before, after)
		}
		// Denied by the server (the policy's context asks the testserver
		// for 401): the upstream never sees the request.
		a := eventuallyStatus(t, http1, http.StatusUnauthorized, "GET", "http://denied.example.com/")
		if a.echo != nil {
			t.Errorf("a denied request answered by an upstream: %v", a)
		}
		if n := echoes["denied"].Requests(); n != 0 {
			t.Errorf("the denied route's upstream got %d requests", n)
		}
		notChecked(t, "open", "http://open.example.com/")
	})

	t.Run("rule-level ExtAuthPolicy overrides the route's, disabled opts a rule out", func(t *testing.T) {
		// The route's policy on a rule without a policy of its own.
		authorized(t, "rules", "http://rules.example.com/", map[string]string{"Level": "route", "Scope": "route"})
		// The rule's policy replaces the route's: its context alone (no
		// Scope), and its deny.
		authorized(t, "rules", "http://rules.example.com/special", map[string]string{"Level": "rule", "Scope": ""})
		before := echoes["rules"].Requests()
		eventuallyStatus(t, http1, http.StatusForbidden, "GET", "http://rules.example.com/admin")
		if a, err := do(http1, "GET", "http://rules.example.com/admin/x"); err != nil || a.status != http.StatusForbidden {
			t.Errorf("/admin/x: %v (%v), want 403 from the rule's policy", a, err)
		}
		if d := echoes["rules"].Requests() - before; d != 0 {
			t.Errorf("the upstream got %d requests for /admin, denied by the rule's policy", d)
		}
		// disabled: true on a rule: not checked by the route's policy.
		notChecked(t, "rules", "http://rules.example.com/health")

		for _, c := range []struct {
			p       *gatewayv1alpha1.ExtAuthPolicy
			section string
		}{{rulesAuth, ""}, {adminAuth, "admin"}, {specialAuth, "special"}, {healthNoAuth, "health"}} {
			g.eventuallyPolicy(t, c.p, "rules", c.section, accepted)
		}
	})

	t.Run("ExtProcPolicy on an HTTPRoute: the extprocserver's headers on the request and the response", func(t *testing.T) {
		var a answer
		harness.Eventually(t, 30*time.Second, func() error {
			var err error
			if a, err = do(http1, "GET", "http://processed.example.com/"); err != nil {
				return err
			}
			if err := a.served("processed"); err != nil {
				return err
			}
			if got, resp := a.echo.Headers.Get("X-Processed-By"), a.header.Get("X-Response-Processed-By"); got != "policy" || resp != "policy" {
				return fmt.Errorf("upstream saw X-Processed-By %q, client X-Response-Processed-By %q; want policy, policy", got, resp)
			}
			return nil
		})
		// Another route of the Gateway is not processed.
		a = eventuallyServed(t, http1, "open", "GET", "http://open.example.com/")
		if got, resp := a.echo.Headers.Get("X-Processed-By"), a.header.Get("X-Response-Processed-By"); got != "" || resp != "" {
			t.Errorf("a route without an ExtProcPolicy: upstream saw X-Processed-By %q, client X-Response-Processed-By %q; want neither", got, resp)
		}
		g.eventuallyPolicy(t, processing, "processed", "", accepted)
	})

	t.Run("ExtAuthPolicy with a missing ExtensionService: Invalid, the route fails closed (500), then heals", func(t *testing.T) {
		c := g.eventuallyPolicy(t, missingAuth, "broken", "", cond{"Accepted", metav1.ConditionFalse, "Invalid"})
		t.Logf("missing-auth: %s: %s", c.Reason, c.Message)
		eventuallyStatus(t, http1, http.StatusInternalServerError, "GET", "http://broken.example.com/")
		for range 10 {
			if a, err := do(http1, "GET", "http://broken.example.com/x"); err != nil || a.status != http.StatusInternalServerError {
				t.Fatalf("broken.example.com with an invalid policy: %v (%v), want 500", a, err)
			}
		}
		if n := echoes["broken"].Requests(); n != 0 {
			t.Fatalf("the route of an invalid policy was served %d times", n)
		}
		// The ExtensionService appears: checked and served.
		g.apply(t, extensionService("late-auth", "authserver", 9443))
		authorized(t, "broken", "http://broken.example.com/", map[string]string{"Route": "broken"})
		g.eventuallyPolicy(t, missingAuth, "broken", "", accepted)
	})

	t.Run("status.ancestors: Accepted on the winner, Conflicted on the newer policy of the same target", func(t *testing.T) {
		for _, p := range []*gatewayv1alpha1.ExtAuthPolicy{checkedAuth, deniedAuth, older} {
			g.eventuallyPolicy(t, p, string(p.Spec.TargetRefs[0].Name), "", accepted)
		}
		c := g.eventuallyPolicy(t, newer, "contested", "", cond{"Accepted", metav1.ConditionFalse, "Conflicted"})
		t.Logf("a-newer: %s: %s", c.Reason, c.Message)
		// The older one's server and context are used: not the newer
		// one's deny.
		authorized(t, "contested", "http://contested.example.com/", map[string]string{"Winner": "older"})

		// Each ancestor names its target and has one Accepted condition.
		var errs []error
		for _, p := range []*gatewayv1alpha1.ExtAuthPolicy{older, newer} {
			if err := g.api.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				t.Fatal(err)
			}
			if n := len(p.Status.Ancestors); n != 1 {
				errs = append(errs, fmt.Errorf("%s: %d ancestors, want 1 (one target)", p.Name, n))
			}
		}
		if !older.CreationTimestamp.Before(&newer.CreationTimestamp) {
			errs = append(errs, fmt.Errorf("creation times %v and %v: the test needs the older one first", older.CreationTimestamp, newer.CreationTimestamp))
		}
		if err := errors.Join(errs...); err != nil {
			t.Error(err)
		}
	})

	t.Logf("TestGatewayAPIPolicies took %v", time.Since(start).Round(time.Millisecond))
}
