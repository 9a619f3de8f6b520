package core

import (
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// globalRateLimitService resolves the configuration file's
// rateLimitService, with its problem when its ExtensionService cannot be
// used: the filter then points at the ExtensionService's cluster, without
// endpoints, and Envoy answers 500 unless failOpen (as for the global
// authorization).
func (b Stage) globalRateLimitService(r *config.RateLimitService) (*ir.RateLimitService, *status.Problem) {
	ns, name := r.Ref()
	ext, _, msg := b.R.Extension(ns, name)
	s := &ir.RateLimitService{Domain: r.Domain, FailOpen: r.FailOpen, Timeout: DefaultAuthTimeout,
		XRateLimitHeaders: r.EnableXRateLimitHeaders, ResourceExhausted: r.EnableResourceExhaustedCode}
	if ext == nil {
		s.Cluster, s.Authority = b.unavailableCluster(ns, name), name+"."+ns
		return s, &status.Problem{Type: contourv1.ConditionTypeVirtualHostError, Reason: status.ReasonRateLimitServiceUnavailable,
			Message: fmt.Sprintf("global rate limit service (configuration file, rateLimitService): %s: rate limited requests fail%s until it is fixed", msg, failOpenNote(r.FailOpen))}
	}
	s.Cluster, s.Authority = ext.Cluster.Name, ext.Authority
	if ext.Timeout != nil {
		s.Timeout = *ext.Timeout
	}
	return s, nil
}
