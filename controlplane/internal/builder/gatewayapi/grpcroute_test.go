package gatewayapi

import (
	"strings"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The regular expressions the gRPC matches make are checked whole.
func TestGRPCMatchRegexTooLarge(t *testing.T) {
	s := func(v string) *string { return &v }
	regex := gwapiv1.GRPCMethodMatchRegularExpression
	for _, m := range []*gwapiv1.GRPCMethodMatch{
		{Method: s(strings.Repeat("M", 120))},
		{Type: &regex, Service: s("a{60}"), Method: s("b{60}")},
	} {
		if _, err := grpcMatch(gwapiv1.GRPCRouteMatch{Method: m}); err == nil {
			t.Errorf("grpcMatch(%+v): a regular expression Envoy refuses was accepted", m)
		}
	}
}
