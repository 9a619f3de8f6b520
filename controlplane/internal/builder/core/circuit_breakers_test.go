package core

import (
	"reflect"
	"testing"

	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestCircuitBreakers(t *testing.T) {
	budget := &extensionRetryBudget
	for name, tc := range map[string]struct {
		in   *v1alpha1.CircuitBreakers
		want *ir.CircuitBreakers
	}{
		"no policy: the retry budget":  {nil, &ir.CircuitBreakers{RetryBudget: budget}},
		"empty policy: the same":       {&v1alpha1.CircuitBreakers{}, &ir.CircuitBreakers{RetryBudget: budget}},
		"other limits keep the budget": {&v1alpha1.CircuitBreakers{MaxRequests: 20, PerHostMaxConnections: 1}, &ir.CircuitBreakers{MaxRequests: 20, PerHostMaxConnections: 1, RetryBudget: budget}},
		"maxRetries replaces it":       {&v1alpha1.CircuitBreakers{MaxRetries: 5}, &ir.CircuitBreakers{MaxRetries: 5}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := circuitBreakers(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("circuitBreakers(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}
