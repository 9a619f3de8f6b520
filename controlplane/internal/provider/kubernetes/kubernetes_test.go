package kubernetes

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

func TestStatusOnly(t *testing.T) {
	proxy := func(gen int64, ann map[string]string, st string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Generation: gen, UID: "u1", Annotations: ann}, Status: contourv1.HTTPProxyStatus{CurrentStatus: st}}
	}
	with := func(p *contourv1.HTTPProxy, f func(*contourv1.HTTPProxy)) *contourv1.HTTPProxy { f(p); return p }
	tests := []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"status write", proxy(2, nil, ""), proxy(2, nil, "valid"), true},
		{"spec change", proxy(2, nil, "valid"), proxy(3, nil, "valid"), false},
		{"annotation change", proxy(2, nil, "valid"), proxy(2, map[string]string{"a": "b"}, "valid"), false},
		{"label change", proxy(2, nil, "valid"), with(proxy(2, nil, "valid"), func(p *contourv1.HTTPProxy) { p.Labels = map[string]string{"a": "b"} }), false},
		{"deleted and created again", proxy(1, nil, "valid"), with(proxy(1, nil, "valid"), func(p *contourv1.HTTPProxy) { p.UID = "u2" }), false},
		{"no generation (not from the API server)", proxy(0, nil, ""), proxy(0, nil, "valid"), false},
		{"other kinds always count", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusOnly(tt.old, tt.cur); got != tt.want {
				t.Errorf("statusOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIgnoredUpdate(t *testing.T) {
	gw := func(gen int64, accepted bool) *gwapiv1.Gateway {
		g := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Generation: gen, UID: "g"}}
		if accepted {
			g.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}
		}
		return g
	}
	btls := func(gen int64, accepted bool) *gwapiv1.BackendTLSPolicy {
		p := &gwapiv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Generation: gen, UID: "b"}}
		if accepted {
			p.Status.Ancestors = []gwapiv1.PolicyAncestorStatus{{ControllerName: "example.com/other"}}
		}
		return p
	}
	ext := func(gen int64, phase string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": phase}}}
		u.SetGroupVersionKind(basicAuthFilter)
		u.SetUID("e")
		u.SetGeneration(gen)
		return u
	}
	ns := func(labels, annotations map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: "n", Labels: labels, Annotations: annotations}}
	}
	for _, tt := range []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"Gateway status write", gw(1, false), gw(1, true), true},
		{"Gateway spec change", gw(1, true), gw(2, true), false},
		{"BackendTLSPolicy status write (another implementation's)", btls(1, false), btls(1, true), true},
		{"BackendTLSPolicy spec change", btls(1, true), btls(2, true), false},
		{"extension kind status write", ext(1, ""), ext(1, "Accepted"), true},
		{"extension kind spec change", ext(1, "Accepted"), ext(2, "Accepted"), false},
		{"Namespace annotation", ns(map[string]string{"a": "1"}, nil), ns(map[string]string{"a": "1"}, map[string]string{"b": "2"}), true},
		{"Namespace label", ns(map[string]string{"a": "1"}, nil), ns(map[string]string{"a": "2"}, nil), false},
	} {
		if got := ignoredUpdate(tt.old, tt.cur); got != tt.want {
			t.Errorf("%s: ignoredUpdate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// askedDiscovery records the group versions discovery was asked about and
// serves none of them.
type askedDiscovery struct {
	discovery.DiscoveryInterface
	asked []string
}

func (d *askedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.asked = append(d.asked, gv)
	return &metav1.APIResourceList{GroupVersion: gv}, nil
}

// A poll asks discovery only about the group versions of kinds not watched
// yet: once the Gateway API is watched, a cluster without our policies'
// CRDs costs one discovery request per poll, not four.
func TestServedGatewayResourcesSkipsWatched(t *testing.T) {
	d := &askedDiscovery{}
	p := &Provider{discovery: d, gateway: gatewayState{watched: map[string]string{}}}
	for _, k := range gatewayKinds() {
		if k.resource != "extauthpolicies" && k.resource != "extprocpolicies" {
			p.gateway.watched[k.resource] = "watched"
		}
	}
	if _, err := p.servedGatewayResources(); err != nil {
		t.Fatal(err)
	}
	if want := []string{gatewayv1alpha1.GroupVersion.String()}; !slices.Equal(d.asked, want) {
		t.Errorf("asked discovery about %v, want %v", d.asked, want)
	}

	// Nothing watched: every group version of gatewayKinds, once each.
	d.asked, p.gateway.watched = nil, map[string]string{}
	if _, err := p.servedGatewayResources(); err != nil {
		t.Fatal(err)
	}
	want := []string{gwapiv1.GroupVersion.String(), "gateway.networking.k8s.io/v1beta1", "gateway.networking.k8s.io/v1alpha3", gatewayv1alpha1.GroupVersion.String()}
	if !slices.Equal(d.asked, want) {
		t.Errorf("asked discovery about %v, want %v", d.asked, want)
	}
}
