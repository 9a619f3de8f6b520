package pipeline_test

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestRoutePartiallyInvalid: a route with invalid rules among valid ones
// is accepted, its other rules served, and PartiallyInvalid names the
// dropped rules (the API's "Dropped Rule" approach); a route whose every
// rule is invalid is not accepted, and never PartiallyInvalid. (The CRD
// refuses some of these rules, a cluster's older CRDs may not: the
// builder's own rules.)
func TestRoutePartiallyInvalid(t *testing.T) {
	const ok = `
  - name: ok
    matches: [{path: {value: /ok}}]
    backendRefs: [{name: echo, port: 80}]`
	const badMatch = `
  - name: bad-match
    matches: [{path: {type: RegularExpression, value: "("}}]
    backendRefs: [{name: echo, port: 80}]`
	const retry = `
  - name: retry
    matches: [{path: {value: /retry}}]
    sessionPersistence: {sessionName: s}
    backendRefs: [{name: echo, port: 80}]`
	const incompatible = `
  - name: both
    matches: [{path: {value: /both}}]
    filters:
    - {type: RequestRedirect, requestRedirect: {scheme: https}}
    - {type: URLRewrite, urlRewrite: {hostname: x.example.com}}`
	for _, tc := range []struct {
		name, rules      string
		accepted, reason string
		partial          string // PartiallyInvalid's status, "" absent
		partialReason    string
		words            []string // in PartiallyInvalid's message, else Accepted's
	}{
		{"all valid", ok, "True", "Accepted", "", "", nil},
		{"a match that cannot be built", ok + badMatch, "True", "Accepted", "True", "UnsupportedValue", []string{"Dropped Rule", "spec.rules[1] (bad-match)"}},
		{"a rule that answers 500", ok + retry, "True", "Accepted", "True", "UnsupportedValue", []string{"Dropped Rule", "spec.rules[1] (retry)", "answers 500"}},
		{"incompatible filters", incompatible + ok, "True", "Accepted", "True", "IncompatibleFilters", []string{"Dropped Rule", "spec.rules[0] (both)"}},
		{"every rule invalid: not accepted", retry + badMatch, "False", "UnsupportedValue", "", "", []string{"spec.rules[0] (retry)", "spec.rules[1] (bad-match)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWithoutCRD(t, gatewayBase, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules:`+tc.rules)
			cs := gatewayConditions(t, res, objects.Ref{Kind: objects.KindHTTPRoute, Namespace: "default", Name: "r"}, "")
			if tc.partial != "" {
				wantCondition(t, cs, "Accepted", tc.accepted, tc.reason)
				wantCondition(t, cs, "PartiallyInvalid", tc.partial, tc.partialReason, tc.words...)
				return
			}
			wantCondition(t, cs, "Accepted", tc.accepted, tc.reason, tc.words...)
			wantCondition(t, cs, "PartiallyInvalid", "", "")
		})
	}
}
