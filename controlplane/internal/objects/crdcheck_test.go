package objects

import (
	"strings"
	"testing"
)

// TestDecodeRefusesWhatTheCRDRefuses: a Gateway API object read from a
// file that its CRD's schema or CEL rules refuse (as the API server
// would) carries the refusal for its status, or, without a status, is a
// refused skip; what the CRD accepts carries nothing.
func TestDecodeRefusesWhatTheCRDRefuses(t *testing.T) {
	const route = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs: [{name: web}]\n  rules:\n  - "
	for _, tc := range []struct {
		name, doc string
		want      string // in the complaint or the skip's reason; "" none
		skipped   bool
	}{
		{"a valid route", route + "backendRefs: [{name: echo, port: 80}]\n", "", false},
		{"an empty header value (schema)", route + "filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: \"\"}]}}]\n",
			"spec.rules[0].filters[0].requestHeaderModifier.set[0].value", false},
		{"replaceFullPath with ReplacePrefixMatch (CEL)", route + "filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replaceFullPath: /x}}}]\n",
			"type must be 'ReplaceFullPath' when replaceFullPath is set", false},
		{"a v1beta1 route too", strings.Replace(route, "/v1\n", "/v1beta1\n", 1) + "filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: x, value: \"\"}]}}]\n",
			"requestHeaderModifier.add[0].value", false},
		{"a Gateway's listener names (CEL)", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec:\n  gatewayClassName: c\n  listeners: [{name: a, port: 80, protocol: HTTP}, {name: a, port: 81, protocol: HTTP}]\n",
			"Listener name must be unique", false},
		{"a TLSRoute without hostnames (schema: minItems)", "apiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {name: t}\nspec:\n  parentRefs: [{name: web}]\n  hostnames: []\n  rules: [{backendRefs: [{name: echo, port: 443}]}]\n",
			"spec.hostnames in body should have at least 1 items", false},
		{"a BackendTLSPolicy's empty hostname (schema: minLength)", "apiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: p}\nspec:\n  targetRefs: [{group: \"\", kind: Service, name: echo}]\n  validation: {hostname: \"\", wellKnownCACertificates: System}\n",
			"spec.validation.hostname", false},
		{"a ReferenceGrant has no status: skipped", "apiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant\nmetadata: {name: g}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: \"\"}]\n  to: [{group: \"\", kind: Service}]\n",
			"refused by the CRD's validation", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Set{}
			skipped, err := s.Decode(strings.NewReader(tc.doc), "f")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ws := range s.Warnings {
				got = append(got, ws...)
			}
			if tc.skipped {
				if len(skipped) != 1 || !skipped[0].Refused || !strings.Contains(skipped[0].Reason, tc.want) {
					t.Errorf("skipped %+v, want one refused saying %q", skipped, tc.want)
				}
				return
			}
			switch all := strings.Join(got, "\n"); {
			case tc.want == "" && len(got) > 0:
				t.Errorf("complaints: %s", all)
			case tc.want != "" && (!strings.HasPrefix(all, CRDComplaintPrefix) || !strings.Contains(all, tc.want)):
				t.Errorf("complaints %q, want %q", all, tc.want)
			}
		})
	}
}
