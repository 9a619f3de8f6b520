package httpproxy

import (
	"fmt"
	"strconv"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// slowStart validates a service's slowStartPolicy (nil for none), which
// applies to the RoundRobin ("") and WeightedLeastRequest policies only:
// window a positive duration, aggression a decimal above 0 (1 when
// empty), minWeightPercent 0-100.
func slowStart(p *contourv1.SlowStartPolicy, lb string) (*ir.SlowStart, error) {
	if p == nil {
		return nil, nil
	}
	if lb != "" && lb != "WeightedLeastRequest" {
		strategy := lb
		if lb == ir.LBRingHash {
			strategy = "RequestHash or Cookie"
		}
		return nil, fmt.Errorf("slow start applies only to the load balancer strategies RoundRobin and WeightedLeastRequest, not %s", strategy)
	}
	w, err := time.ParseDuration(p.Window)
	if err != nil || w <= 0 {
		return nil, fmt.Errorf("window %q is not a positive duration (e.g. 30s)", p.Window)
	}
	ss := &ir.SlowStart{Window: w, Aggression: 1, MinWeightPercent: float64(p.MinimumWeightPercent)}
	if p.Aggression != "" {
		a, err := strconv.ParseFloat(p.Aggression, 64)
		if err != nil || a <= 0 || a > 1e6 {
			return nil, fmt.Errorf("aggression %q is not a decimal above 0 (1.0 is linear)", p.Aggression)
		}
		ss.Aggression = a
	}
	if p.MinimumWeightPercent > 100 {
		return nil, fmt.Errorf("minWeightPercent %d is above 100", p.MinimumWeightPercent)
	}
	return ss, nil
}
