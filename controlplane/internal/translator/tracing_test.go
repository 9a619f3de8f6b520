package translator

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Every HCM traces with the model's tracing: the plaintext listener's and
// each TLS host's own.
func TestEveryHCMTraces(t *testing.T) {
	m := sharedModel(
		[]*ir.VirtualHost{{FQDN: "plain.example.com", Routes: []*ir.Route{{Path: "/"}}}},
		[]*ir.SecureVirtualHost{{VirtualHost: ir.VirtualHost{FQDN: "secure.example.com", Routes: []*ir.Route{{Path: "/"}}}, Secret: "default/tls"}})
	m.Tracing = &ir.Tracing{Cluster: "extension/obs/otel", Authority: "otel.obs", ServiceName: "edge", OverallSampling: 100, MaxPathTagLength: 256}
	hcms := hcmsOf(t, Translate(m, Options{}))
	if len(hcms) != 2 {
		t.Fatalf("%d HCMs, want 2", len(hcms))
	}
	for name, hcm := range hcms {
		if hcm.GetTracing().GetProvider().GetName() != OpenTelemetryTracerName {
			t.Errorf("%s: tracing %v, want the OpenTelemetry tracer", name, hcm.GetTracing())
		}
	}
	m.Tracing = nil
	for name, hcm := range hcmsOf(t, Translate(m, Options{})) {
		if hcm.Tracing != nil {
			t.Errorf("%s traces without tracing in the model: %v", name, hcm.Tracing)
		}
	}
}

// The cache compares hosts, which do not hold the tracing: a change of
// the tracing alone translates every TLS host again.
func TestCacheFollowsTracing(t *testing.T) {
	model := func(service string) *ir.Model {
		m := sharedModel(nil, []*ir.SecureVirtualHost{{VirtualHost: ir.VirtualHost{FQDN: "secure.example.com", Routes: []*ir.Route{{Path: "/"}}}, Secret: "default/tls"}})
		if service != "" {
			m.Tracing = &ir.Tracing{Cluster: "extension/obs/otel", ServiceName: service, OverallSampling: 100, MaxPathTagLength: 256}
		}
		return m
	}
	c := NewCache()
	for _, step := range []struct {
		service string
		hits    int
	}{{"", 0}, {"", 1}, {"edge", 0}, {"edge", 1}, {"other", 0}, {"", 0}} {
		checkUncached(t, TranslateCached(model(step.service), Options{}, c), Translate(model(step.service), Options{}))
		if c.Hits != step.hits {
			t.Errorf("tracing %q: %d hosts reused, want %d", step.service, c.Hits, step.hits)
		}
	}
}

// hcmsOf are the HCMs of every filter chain of r's listeners, by chain
// (listener/chain).
func hcmsOf(t *testing.T, r *Resources) map[string]*hcmv3.HttpConnectionManager {
	t.Helper()
	out := map[string]*hcmv3.HttpConnectionManager{}
	for _, m := range r.Listeners {
		l := m.(*listenerv3.Listener)
		for _, fc := range l.FilterChains {
			for _, f := range fc.Filters {
				hcm := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(hcm) == nil {
					out[l.Name+"/"+fc.Name] = hcm
				}
			}
		}
	}
	return out
}
