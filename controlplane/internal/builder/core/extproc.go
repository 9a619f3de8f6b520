package core

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ExtProc resolves a processor's ExtensionService and settings. problem is
// the reason the ExtensionService cannot be used (missing or invalid); p is
// returned with its other settings anyway.
func ExtProc(r *Resolver, in *contourv1.ExtProc, defaultNamespace, where string) (p *ir.ExtProc, problem string) {
	p = &ir.ExtProc{Mode: ProcessingMode(in.ProcessingMode), AllowModeOverride: in.AllowModeOverride}
	if m := in.MutationRules; m != nil {
		p.MutationRules = &ir.MutationRules{AllowAllRouting: m.AllowAllRouting, AllowEnvoy: m.AllowEnvoy, DisallowSystem: m.DisallowSystem, DisallowAll: m.DisallowAll, DisallowIsError: m.DisallowIsError}
	}
	g := in.GRPCService
	if g == nil {
		return p, where + ".grpcService is required"
	}
	p.FailOpen = g.FailOpen
	problem = ResolveProcessorService(r, p, g, defaultNamespace)
	return p, problem
}

// ResolveProcessorService points p at the ExtensionService of g, with g's
// timeout (or the ExtensionService's).
func ResolveProcessorService(r *Resolver, p *ir.ExtProc, g *contourv1.GRPCService, defaultNamespace string) string {
	ns := g.ExtensionServiceRef.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	ext, _, msg := r.Extension(ns, g.ExtensionServiceRef.Name)
	if ext != nil {
		p.Cluster, p.Authority = ext.Cluster.Name, ext.Authority
		if ext.Timeout != nil {
			p.Timeout = ext.Timeout
		}
	}
	if d, err := apicheck.ParseTimeout(g.ResponseTimeout); err == nil && d != nil {
		p.Timeout = d
	}
	return msg
}

// ProcessingMode is what a processor is sent of a request and its
// response (nil: Envoy's defaults).
func ProcessingMode(m *contourv1.ProcessingMode) *ir.ProcessingMode {
	if m == nil {
		return nil
	}
	return &ir.ProcessingMode{
		RequestHeader: string(m.RequestHeaderMode), ResponseHeader: string(m.ResponseHeaderMode),
		RequestBody: string(m.RequestBodyMode), ResponseBody: string(m.ResponseBodyMode),
		RequestTrailer: string(m.RequestTrailerMode), ResponseTrailer: string(m.ResponseTrailerMode),
	}
}
