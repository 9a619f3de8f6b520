package fields_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/fields"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gatewayFixture is one of each Gateway API kind that can refuse a field,
// valid: a class of ours, a Gateway with an HTTP listener and an HTTPS one
// (whose certificate is missing: no matter here), an HTTPRoute and a
// GRPCRoute attached to it.
func gatewayFixture() *objects.Set {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 1}
	}
	parents := []gwapiv1.ParentReference{{Name: "g"}}
	port := gwapiv1.PortNumber(80)
	backend := gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "s", Port: &port}}
	return &objects.Set{
		GatewayClasses: []*gwapiv1.GatewayClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1},
			Spec:       gwapiv1.GatewayClassSpec{ControllerName: config.DefaultGatewayControllerName},
		}},
		Gateways: []*gwapiv1.Gateway{{ObjectMeta: meta("g"), Spec: gwapiv1.GatewaySpec{
			GatewayClassName: "c",
			AllowedListeners: &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{From: new(gwapiv1.NamespacesFromSame)}},
			Listeners: []gwapiv1.Listener{
				{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType},
				{Name: "https", Port: 443, Protocol: gwapiv1.HTTPSProtocolType, TLS: &gwapiv1.ListenerTLSConfig{
					CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "cert"}},
				}},
				{Name: "tls", Port: 9443, Protocol: gwapiv1.TLSProtocolType, TLS: &gwapiv1.ListenerTLSConfig{Mode: new(gwapiv1.TLSModePassthrough)}},
				{Name: "tcp", Port: 5432, Protocol: gwapiv1.TCPProtocolType},
				{Name: "udp", Port: 5300, Protocol: gwapiv1.UDPProtocolType},
			},
		}}},
		ListenerSets: []*gwapiv1.ListenerSet{{ObjectMeta: meta("ls"), Spec: gwapiv1.ListenerSetSpec{
			ParentRef: gwapiv1.ParentGatewayReference{Name: "g"},
			Listeners: []gwapiv1.ListenerEntry{
				{Name: "https", Port: 8443, Protocol: gwapiv1.HTTPSProtocolType, TLS: &gwapiv1.ListenerTLSConfig{
					CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "cert"}},
				}},
			},
		}}},
		HTTPRoutes: []*gwapiv1.HTTPRoute{{ObjectMeta: meta("r"), Spec: gwapiv1.HTTPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwapiv1.HTTPRouteRule{{BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: backend}}}},
		}}},
		GRPCRoutes: []*gwapiv1.GRPCRoute{{ObjectMeta: meta("gr"), Spec: gwapiv1.GRPCRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwapiv1.GRPCRouteRule{{BackendRefs: []gwapiv1.GRPCBackendRef{{BackendRef: backend}}}},
		}}},
		TLSRoutes: []*gwapiv1.TLSRoute{{ObjectMeta: meta("tr"), Spec: gwapiv1.TLSRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{backend}}},
		}}},
		TCPRoutes: []*gwapiv1.TCPRoute{{ObjectMeta: meta("cr"), Spec: gwapiv1.TCPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwapiv1.TCPRouteRule{{BackendRefs: []gwapiv1.BackendRef{backend}}},
		}}},
		UDPRoutes: []*gwapiv1.UDPRoute{{ObjectMeta: meta("ur"), Spec: gwapiv1.UDPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwapiv1.UDPRouteRule{{BackendRefs: []gwapiv1.BackendRef{backend}}},
		}}},
	}
}

// statusStrings are the strings of the status the builder gives the
// object of kind (of gatewayFixture's) in set: its conditions' messages
// among them.
func statusStrings(t *testing.T, set *objects.Set, kind string) []string {
	t.Helper()
	name := map[string]string{fields.KindGatewayClass: "c", fields.KindGateway: "g", fields.KindHTTPRoute: "r", fields.KindGRPCRoute: "gr", fields.KindTLSRoute: "tr", fields.KindTCPRoute: "cr", fields.KindUDPRoute: "ur", fields.KindListenerSet: "ls"}[kind]
	for _, o := range builder.Build(set, builder.Options{}).Status {
		if o.Ref.Kind != kind || o.Ref.Name != name {
			continue
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		var out []string
		collectStrings(v, &out)
		return out
	}
	t.Fatalf("no status for %s %s", kind, name)
	return nil
}

func collectStrings(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, v)
	case []any:
		for _, e := range v {
			collectStrings(e, out)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k != "LastTransitionTime" && k != "lastTransitionTime" {
				collectStrings(v[k], out)
			}
		}
	}
}

// gatewayCase sets one field of gatewayFixture's object of kind.
type gatewayCase struct {
	kind, pattern string
	set           func(s *objects.Set)
	// want is in the object's status (the builder's message) when the
	// field is refused.
	want string
}

func httpRule(s *objects.Set) *gwapiv1.HTTPRouteRule { return &s.HTTPRoutes[0].Spec.Rules[0] }
func grpcRule(s *objects.Set) *gwapiv1.GRPCRouteRule { return &s.GRPCRoutes[0].Spec.Rules[0] }

// httpBackendFilter gives the HTTPRoute's backend one filter.
func httpBackendFilter(f gwapiv1.HTTPRouteFilter) func(s *objects.Set) {
	return func(s *objects.Set) { httpRule(s).BackendRefs[0].Filters = []gwapiv1.HTTPRouteFilter{f} }
}

// httpFilter gives the HTTPRoute's rule one filter.
func httpFilter(f gwapiv1.HTTPRouteFilter) func(s *objects.Set) {
	return func(s *objects.Set) { httpRule(s).Filters = []gwapiv1.HTTPRouteFilter{f} }
}

func grpcBackendFilter(f gwapiv1.GRPCRouteFilter) func(s *objects.Set) {
	return func(s *objects.Set) { grpcRule(s).BackendRefs[0].Filters = []gwapiv1.GRPCRouteFilter{f} }
}

func onBackend(typ string) string { return `filter type "` + typ + `" is not supported on a backend` }

var (
	mirror = &gwapiv1.HTTPRequestMirrorFilter{BackendRef: gwapiv1.BackendObjectReference{Name: "m"}}
	extRef = &gwapiv1.LocalObjectReference{Group: "example.com", Kind: "X", Name: "x"}
	scope  = gwapiv1.GatewayDefaultScopeAll
)

// refusedGatewayCases set each refused field of the table.
var refusedGatewayCases = []gatewayCase{
	{fields.KindGatewayClass, "spec.parametersRef", func(s *objects.Set) {
		s.GatewayClasses[0].Spec.ParametersRef = &gwapiv1.ParametersReference{Kind: "ConfigMap", Name: "p"}
	}, "spec.parametersRef is not supported"},
	{fields.KindGateway, "spec.listeners.tls.options", func(s *objects.Set) {
		s.Gateways[0].Spec.Listeners[1].TLS.Options = map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"a": "b"}
	}, "tls.options are not supported"},
	{fields.KindGateway, "spec.addresses.value", func(s *objects.Set) {
		s.Gateways[0].Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: "10.0.0.1"}}
	}, `spec.addresses[0]: a static address ("10.0.0.1") cannot be honoured`},
	{fields.KindGateway, "spec.addresses.type", func(s *objects.Set) {
		s.Gateways[0].Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Type: ptr.To(gwapiv1.HostnameAddressType)}}
	}, `spec.addresses[0]: an address of type "Hostname" cannot be assigned: only IPAddress`},
	{fields.KindGateway, "spec.infrastructure.parametersRef", func(s *objects.Set) {
		s.Gateways[0].Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{ParametersRef: &gwapiv1.LocalParametersReference{Kind: "ConfigMap", Name: "p"}}
	}, "spec.infrastructure.parametersRef is not supported"},
	{fields.KindListenerSet, "spec.listeners.tls.options", func(s *objects.Set) {
		s.ListenerSets[0].Spec.Listeners[0].TLS.Options = map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"a": "b"}
	}, "tls.options are not supported"},
	{fields.KindGateway, "spec.defaultScope", func(s *objects.Set) { s.Gateways[0].Spec.DefaultScope = scope }, "spec.defaultScope (default Gateways) is not supported"},

	{fields.KindHTTPRoute, "spec.rules.filters.externalAuth", httpFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{}}), `filter type "ExternalAuth" is not supported`},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.requestMirror", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestMirror, RequestMirror: mirror}), onBackend("RequestMirror")},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.requestRedirect", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{}}), onBackend("RequestRedirect")},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.urlRewrite", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwapiv1.HTTPURLRewriteFilter{}}), onBackend("URLRewrite")},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.cors", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterCORS, CORS: &gwapiv1.HTTPCORSFilter{}}), onBackend("CORS")},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.externalAuth", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{}}), onBackend("ExternalAuth")},
	{fields.KindHTTPRoute, "spec.rules.backendRefs.filters.extensionRef", httpBackendFilter(gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExtensionRef, ExtensionRef: extRef}), "ExtensionRef: no extension of this kind is registered"},
	{fields.KindHTTPRoute, "spec.rules.sessionPersistence", func(s *objects.Set) { httpRule(s).SessionPersistence = &gwapiv1.SessionPersistence{} }, "spec.rules[0].sessionPersistence is not supported"},

	{fields.KindGRPCRoute, "spec.rules.backendRefs.filters.requestMirror", grpcBackendFilter(gwapiv1.GRPCRouteFilter{Type: gwapiv1.GRPCRouteFilterRequestMirror, RequestMirror: mirror}), onBackend("RequestMirror")},
	{fields.KindGRPCRoute, "spec.rules.backendRefs.filters.extensionRef", grpcBackendFilter(gwapiv1.GRPCRouteFilter{Type: gwapiv1.GRPCRouteFilterExtensionRef, ExtensionRef: extRef}), "ExtensionRef: no extension of this kind is registered"},
	{fields.KindGRPCRoute, "spec.rules.sessionPersistence", func(s *objects.Set) { grpcRule(s).SessionPersistence = &gwapiv1.SessionPersistence{} }, "spec.rules[0].sessionPersistence is not supported"},
}

// ignoredGatewayCases set each ignored field of the table.
var ignoredGatewayCases = []gatewayCase{
	{kind: fields.KindGatewayClass, pattern: "spec.description", set: func(s *objects.Set) {
		d := "a class"
		s.GatewayClasses[0].Spec.Description = &d
	}},
	{kind: fields.KindGateway, pattern: "spec.infrastructure.labels", set: func(s *objects.Set) {
		s.Gateways[0].Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{Labels: map[gwapiv1.LabelKey]gwapiv1.LabelValue{"a": "b"}}
	}},
	{kind: fields.KindGateway, pattern: "spec.infrastructure.annotations", set: func(s *objects.Set) {
		s.Gateways[0].Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"a": "b"}}
	}},
	{kind: fields.KindHTTPRoute, pattern: "spec.useDefaultGateways", set: func(s *objects.Set) { s.HTTPRoutes[0].Spec.UseDefaultGateways = scope }},
	{kind: fields.KindGRPCRoute, pattern: "spec.useDefaultGateways", set: func(s *objects.Set) { s.GRPCRoutes[0].Spec.UseDefaultGateways = scope }},
	{kind: fields.KindTLSRoute, pattern: "spec.useDefaultGateways", set: func(s *objects.Set) { s.TLSRoutes[0].Spec.UseDefaultGateways = scope }},
	{kind: fields.KindTCPRoute, pattern: "spec.useDefaultGateways", set: func(s *objects.Set) { s.TCPRoutes[0].Spec.UseDefaultGateways = scope }},
	{kind: fields.KindUDPRoute, pattern: "spec.useDefaultGateways", set: func(s *objects.Set) { s.UDPRoutes[0].Spec.UseDefaultGateways = scope }},
}

// TestGatewayTableSaysWhatTheBuilderDoes: every refused field of the
// Gateway API table, set, gets the builder's message in the object's
// status; every ignored field, set, changes nothing of it. Each refused
// and ignored field of the table has its case here, so that the table
// cannot say a field is refused or ignored that the builder treats
// otherwise.
func TestGatewayTableSaysWhatTheBuilderDoes(t *testing.T) {
	cases := map[string]bool{}
	for _, c := range refusedGatewayCases {
		cases[c.kind+" "+c.pattern] = true
		t.Run("refused/"+c.kind+"/"+c.pattern, func(t *testing.T) {
			set := gatewayFixture()
			if got := strings.Join(statusStrings(t, set, c.kind), "\n"); strings.Contains(got, c.want) {
				t.Fatalf("the fixture's status already says %q", c.want)
			}
			c.set(set)
			if got := strings.Join(statusStrings(t, set, c.kind), "\n"); !strings.Contains(got, c.want) {
				t.Errorf("%s set: the status does not say %q:\n%s", c.pattern, c.want, got)
			}
		})
	}
	for _, c := range ignoredGatewayCases {
		cases[c.kind+" "+c.pattern] = true
		t.Run("ignored/"+c.kind+"/"+c.pattern, func(t *testing.T) {
			set := gatewayFixture()
			before := statusStrings(t, set, c.kind)
			c.set(set)
			if after := statusStrings(t, set, c.kind); !slices.Equal(before, after) {
				t.Errorf("%s set: the status changed:\n%q\nwas\n%q", c.pattern, after, before)
			}
		})
	}
	for _, k := range fields.GatewayKinds {
		for _, r := range fields.GatewayRows(k.Kind) {
			if !r.Support.IsImplemented() && !cases[k.Kind+" "+r.Pattern] {
				t.Errorf("%s %s is refused or ignored in the table, and no case here checks that the builder does so", k.Kind, r.Pattern)
			}
		}
	}
	if len(cases) != len(refusedGatewayCases)+len(ignoredGatewayCases) {
		t.Errorf("a field has two cases")
	}
}
