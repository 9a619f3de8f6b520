package statuswriter

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func TestUpdateJSON(t *testing.T) {
	for _, tc := range []struct {
		u    Update
		want string
	}{
		{Update{Ref: objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "a", Name: "p"}, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "valid"}},
			`{"apiVersion":"projectcontour.io/v1","kind":"HTTPProxy","namespace":"a","name":"p","status":{"currentStatus":"valid"`},
		{Update{Ref: objects.Ref{Kind: objects.KindExtensionService, Namespace: "a", Name: "e"}, ExtensionService: &v1alpha1.ExtensionServiceStatus{}},
			`{"apiVersion":"projectcontour.io/v1alpha1","kind":"ExtensionService","namespace":"a","name":"e","status":{`},
		{Update{Ref: objects.Ref{Kind: objects.KindTLSCertificateDelegation, Namespace: "a", Name: "d"}, Delegation: &contourv1.TLSCertificateDelegationStatus{}},
			`{"apiVersion":"projectcontour.io/v1","kind":"TLSCertificateDelegation","namespace":"a","name":"d","status":{`},
		{Update{Ref: objects.Ref{Kind: objects.KindExtAuthPolicy, Namespace: "a", Name: "eap"}, ExtAuthPolicy: policyStatus(gwapiv1.PolicyReasonAccepted)},
			`{"apiVersion":"gateway.portcullis.dev/v1alpha1","kind":"ExtAuthPolicy","namespace":"a","name":"eap","status":{"ancestors":[{"ancestorRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"g","sectionName":"https"},"controllerName":"portcullis.dev/gateway-controller","conditions":[{"type":"Accepted","status":"True"`},
		{Update{Ref: objects.Ref{Kind: objects.KindExtProcPolicy, Namespace: "a", Name: "epp"}, ExtProcPolicy: policyStatus(gwapiv1.PolicyReasonConflicted)},
			`{"apiVersion":"gateway.portcullis.dev/v1alpha1","kind":"ExtProcPolicy","namespace":"a","name":"epp","status":{"ancestors":[{"ancestorRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"g","sectionName":"https"},"controllerName":"portcullis.dev/gateway-controller","conditions":[{"type":"Accepted","status":"False"`},
	} {
		b, err := json.Marshal(tc.u)
		if err != nil || !strings.HasPrefix(string(b), tc.want) {
			t.Errorf("%s: %s (%v), want it to start with %s", tc.u.Ref, b, err, tc.want)
		}
	}
}

// policyStatus is a policy's status on the listener https of Gateway g:
// Accepted, or not (reason Conflicted).
func policyStatus(reason gwapiv1.PolicyConditionReason) *gwapiv1.PolicyStatus {
	group, kind, section := gwapiv1.Group(gwapiv1.GroupName), gwapiv1.Kind("Gateway"), gwapiv1.SectionName("https")
	status := metav1.ConditionTrue
	if reason != gwapiv1.PolicyReasonAccepted {
		status = metav1.ConditionFalse
	}
	return &gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{{
		AncestorRef:    gwapiv1.ParentReference{Group: &group, Kind: &kind, Name: "g", SectionName: &section},
		ControllerName: "portcullis.dev/gateway-controller",
		Conditions:     []metav1.Condition{{Type: string(gwapiv1.PolicyConditionAccepted), Status: status, Reason: string(reason)}},
	}}}
}

// The log writer logs a status once, and again only when it changes.
func TestLogWritesChanges(t *testing.T) {
	var buf bytes.Buffer
	l := &Log{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	ref := objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "a", Name: "p"}
	valid := Update{Ref: ref, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "valid"}}
	invalid := Update{Ref: ref, HTTPProxy: &contourv1.HTTPProxyStatus{CurrentStatus: "invalid"}}
	for _, batch := range [][]Update{{valid}, {valid}, nil, {invalid}, {invalid}} {
		l.Write(context.Background(), batch)
	}
	if n := strings.Count(buf.String(), "HTTPProxy a/p"); n != 2 {
		t.Errorf("logged %d times, want 2 (first status, then the change):\n%s", n, buf.String())
	}
}
