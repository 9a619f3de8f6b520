package core

import (
	"fmt"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// PodNamespaceEnv is the environment variable of Envoy's container that
// holds its pod's namespace (the chart sets it), read by
// tracing.includePodDetail; the pod's name is HOSTNAME, which every
// container has.
const PodNamespaceEnv = "POD_NAMESPACE"

// tracing resolves the configuration file's tracing, with its problem
// when the collector's ExtensionService cannot be used: the tracer then
// exports to that ExtensionService's cluster kept without endpoints, so
// that Envoy's configuration does not change shape and the next build
// after the ExtensionService is fixed heals it. Tracing protects nothing:
// requests are served as usual either way.
func (b Stage) tracing(t *config.Tracing) (*ir.Tracing, *status.Problem) {
	ns, name := t.Ref()
	out := &ir.Tracing{ServiceName: t.ServiceName, OverallSampling: 100, MaxPathTagLength: config.DefaultMaxPathTagLength}
	if out.ServiceName == "" {
		out.ServiceName = config.DefaultTracingServiceName
	}
	if t.OverallSampling != nil {
		out.OverallSampling = float64(*t.OverallSampling)
	}
	if t.MaxPathTagLength != nil {
		out.MaxPathTagLength = *t.MaxPathTagLength
	}
	if t.IncludePodDetail {
		out.Tags = append(out.Tags,
			ir.TracingTag{Name: config.PodNameTag, Environment: "HOSTNAME"},
			ir.TracingTag{Name: config.PodNamespaceTag, Environment: PodNamespaceEnv})
	}
	for _, c := range t.CustomTags {
		out.Tags = append(out.Tags, ir.TracingTag{Name: c.TagName, Literal: c.Literal, RequestHeader: c.RequestHeaderName})
	}
	ext, _, msg := b.R.Extension(ns, name)
	if ext == nil {
		out.Cluster, out.Authority = b.unavailableCluster(ns, name), name+"."+ns
		return out, &status.Problem{Type: "Tracing", Reason: status.ReasonTracingUnavailable,
			Message: fmt.Sprintf("tracing (configuration file, tracing.extensionService): %s: Envoy's spans are dropped until it is fixed", msg)}
	}
	out.Cluster, out.Authority, out.Timeout = ext.Cluster.Name, ext.Authority, ext.Timeout
	return out, nil
}
