package translator

import (
	"time"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ExtProcFilterName is the external processing filter's name in Envoy.
const ExtProcFilterName = "envoy.filters.http.ext_proc"

// extProcFilter is external processing (docs/design/external-processing.md):
// in an HCM when a processor applies to it, its host's own or the global
// one.
type extProcFilter struct{}

func (extProcFilter) name() string { return ExtProcFilterName }

func (extProcFilter) needed(h hcmSettings) bool { return h.proc != nil }

func (extProcFilter) httpFilters(h hcmSettings) []*hcmv3.HttpFilter {
	return oneFilter(ExtProcFilterName, extProc(h.proc))
}

// perRoute is set only on routes whose processing differs from the
// filter's: off on a route processed by its own filter (routefilters.go).
func (extProcFilter) perRoute(r *ir.Route) (string, proto.Message) {
	switch {
	case r.Processor != nil:
		return ExtProcFilterName, extProcPerRoute(&ir.ExtProcPerRoute{Disabled: true})
	case r.ExtProc != nil:
		return ExtProcFilterName, extProcPerRoute(r.ExtProc)
	}
	return "", nil
}

// maxMessageTimeout is the largest message_timeout Envoy accepts.
const maxMessageTimeout = time.Hour

// defaultMessageTimeout bounds each message exchange when no timeout is
// given: the default of a check (builder.DefaultAuthTimeout), in place of
// Envoy's 200ms, which failed every processor slower than that.
const defaultMessageTimeout = 2 * time.Second

// extProc is the ext_proc filter of one HCM. The response timeout bounds
// both the gRPC stream and each message exchange (Envoy's message_timeout
// defaults to 200ms, too short for a processor that looks at bodies, and
// cannot exceed an hour: "infinity" and longer timeouts get the hour).
// Without one, the stream is unbounded and each message gets
// defaultMessageTimeout.
func extProc(p *ir.ExtProc) *extprocv3.ExternalProcessor {
	cfg := &extprocv3.ExternalProcessor{
		GrpcService:       grpcService(p.Cluster, p.Authority, streamTimeout(p.Timeout)),
		FailureModeAllow:  p.FailOpen,
		ProcessingMode:    processingMode(p.Mode),
		AllowModeOverride: p.AllowModeOverride,
		MessageTimeout:    durationpb.New(messageTimeout(p.Timeout)),
	}
	if m := p.MutationRules; m != nil {
		cfg.MutationRules = &mutationv3.HeaderMutationRules{
			AllowAllRouting: wrapperspb.Bool(m.AllowAllRouting),
			AllowEnvoy:      wrapperspb.Bool(m.AllowEnvoy),
			DisallowSystem:  wrapperspb.Bool(m.DisallowSystem),
			DisallowAll:     wrapperspb.Bool(m.DisallowAll),
			DisallowIsError: wrapperspb.Bool(m.DisallowIsError),
		}
	}
	return cfg
}

// extProcPerRoute disables or overrides the HCM's ext_proc on one route.
func extProcPerRoute(r *ir.ExtProcPerRoute) *extprocv3.ExtProcPerRoute {
	if r.Disabled {
		return &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Disabled{Disabled: true}}
	}
	o := &extprocv3.ExtProcOverrides{ProcessingMode: processingMode(r.Overrides.Mode)}
	if s := r.Overrides.Service; s != nil {
		o.GrpcService = grpcService(s.Cluster, s.Authority, streamTimeout(s.Timeout))
	}
	if f := r.Overrides.FailOpen; f != nil {
		o.FailureModeAllow = wrapperspb.Bool(*f)
	}
	return &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: o}}
}

// messageTimeout is the message_timeout for a response timeout t.
func messageTimeout(t *time.Duration) time.Duration {
	switch {
	case t == nil:
		return defaultMessageTimeout
	case *t == 0 || *t > maxMessageTimeout:
		return maxMessageTimeout
	}
	return *t
}

// streamTimeout is the gRPC timeout of a processor's stream: unset (none)
// when the timeout is unset or infinite.
func streamTimeout(t *time.Duration) *time.Duration {
	if t == nil || *t == 0 {
		return nil
	}
	return t
}

func processingMode(m *ir.ProcessingMode) *extprocv3.ProcessingMode {
	if m == nil {
		return nil
	}
	return &extprocv3.ProcessingMode{
		RequestHeaderMode:   headerMode(m.RequestHeader),
		ResponseHeaderMode:  headerMode(m.ResponseHeader),
		RequestBodyMode:     bodyMode(m.RequestBody),
		ResponseBodyMode:    bodyMode(m.ResponseBody),
		RequestTrailerMode:  headerMode(m.RequestTrailer),
		ResponseTrailerMode: headerMode(m.ResponseTrailer),
	}
}

// headerMode and bodyMode map the API's names (checked by the builder) to
// Envoy's enums; unknown or empty is Envoy's default.
func headerMode(s string) extprocv3.ProcessingMode_HeaderSendMode {
	return extprocv3.ProcessingMode_HeaderSendMode(extprocv3.ProcessingMode_HeaderSendMode_value[s])
}

func bodyMode(s string) extprocv3.ProcessingMode_BodySendMode {
	return extprocv3.ProcessingMode_BodySendMode(extprocv3.ProcessingMode_BodySendMode_value[s])
}
