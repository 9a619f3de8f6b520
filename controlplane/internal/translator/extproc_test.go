package translator

import (
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The response timeout bounds the stream (none when unset or infinite) and
// each message (at most Envoy's hour; 2s when unset, not Envoy's 200ms).
func TestExtProcTimeouts(t *testing.T) {
	d := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name                 string
		timeout              *time.Duration
		wantStream, wantMsgs *time.Duration
	}{
		{"unset: no stream timeout, 2s per message (not Envoy's 200ms)", nil, nil, d(2 * time.Second)},
		{"infinite: no stream timeout, an hour per message", d(0), nil, d(time.Hour)},
		{"a second", d(time.Second), d(time.Second), d(time.Second)},
		{"two hours: the stream's, an hour per message", d(2 * time.Hour), d(2 * time.Hour), d(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := extProc(&ir.ExtProc{Cluster: "extension/proc/p", Timeout: tc.timeout})
			check := func(what string, got interface {
				IsValid() bool
				AsDuration() time.Duration
			}, want *time.Duration) {
				if (want == nil) != !got.IsValid() || want != nil && got.AsDuration() != *want {
					t.Errorf("%s: got %v, want %v", what, got, want)
				}
			}
			check("stream timeout", cfg.GetGrpcService().GetTimeout(), tc.wantStream)
			check("message timeout", cfg.GetMessageTimeout(), tc.wantMsgs)
		})
	}
}

func TestExtProcPerRoute(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		route ir.Route
		want  proto.Message
	}{
		{"the filter's processing: nothing", ir.Route{}, nil},
		{"disabled", ir.Route{ExtProc: &ir.ExtProcPerRoute{Disabled: true}},
			&extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Disabled{Disabled: true}}},
		{"a route with its own processor: the HCM's is off", ir.Route{Processor: &ir.ExtProc{Cluster: "extension/proc/other"}},
			&extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Disabled{Disabled: true}}},
		{"overrides", ir.Route{ExtProc: &ir.ExtProcPerRoute{Overrides: &ir.ExtProcOverrides{
			FailOpen: &yes,
			Mode:     &ir.ProcessingMode{RequestHeader: "SKIP", RequestBody: "BUFFERED"},
		}}}, &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: &extprocv3.ExtProcOverrides{
			ProcessingMode: &extprocv3.ProcessingMode{
				RequestHeaderMode: extprocv3.ProcessingMode_SKIP,
				RequestBodyMode:   extprocv3.ProcessingMode_BUFFERED,
			},
			FailureModeAllow: wrapperspb.Bool(true),
		}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, got := (extProcFilter{}).perRoute(&tc.route)
			if tc.want == nil {
				if got != nil {
					t.Errorf("got %v, want none", got)
				}
				return
			}
			if name != ExtProcFilterName || !proto.Equal(got, tc.want) {
				t.Errorf("got %s: %v, want %s: %v", name, got, ExtProcFilterName, tc.want)
			}
		})
	}
}
