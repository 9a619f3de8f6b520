package core

import (
	"fmt"
	"math"
	"strings"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// defaultHealthCheckHost is the Host of HTTP checks without one
// (Contour's).
const defaultHealthCheckHost = "contour-envoy-healthcheck"

// HTTPHealthCheck validates a route's healthCheckPolicy, with Contour's
// defaults (those of an ExtensionService's checks: every 5s, a 2s
// timeout, unhealthy after 3 failures, healthy after 2 passes; Host
// contour-envoy-healthcheck; status 200); nil for none.
func HTTPHealthCheck(p *contourv1.HTTPHealthCheckPolicy) (*ir.HealthCheck, error) {
	if p == nil {
		return nil, nil
	}
	if !strings.HasPrefix(p.Path, "/") {
		return nil, fmt.Errorf("path %q must start with /", p.Path)
	}
	if strings.ContainsAny(p.Path, "\r\n\x00?#") || strings.ContainsAny(p.Host, "\r\n\x00/") {
		return nil, fmt.Errorf("path %q or host %q holds a character not allowed there", p.Path, p.Host)
	}
	hc, err := healthTiming(p.IntervalSeconds, p.TimeoutSeconds)
	if err != nil {
		return nil, err
	}
	unhealthy, healthy, err := healthThresholds(p.UnhealthyThresholdCount, p.HealthyThresholdCount)
	if err != nil {
		return nil, err
	}
	setHealthThresholds(hc, unhealthy, healthy)
	http := &ir.HTTPHealthCheck{Path: p.Path, Host: p.Host}
	if http.Host == "" {
		http.Host = defaultHealthCheckHost
	}
	for i, r := range p.ExpectedStatuses {
		if r.Start < 100 || r.End > 600 || r.Start >= r.End {
			return nil, fmt.Errorf("expectedStatuses[%d]: [%d, %d) is not a range of statuses within [100, 600)", i, r.Start, r.End)
		}
		http.ExpectedStatuses = append(http.ExpectedStatuses, ir.StatusRange{Start: r.Start, End: r.End})
	}
	hc.HTTP = http
	return hc, nil
}

// healthThresholds are an HTTP policy's threshold counts (int64 in its
// API) as the uint32 of Envoy's, refused out of that range.
func healthThresholds(unhealthy, healthy int64) (uint32, uint32, error) {
	if unhealthy < 0 || healthy < 0 || unhealthy > math.MaxUint32 || healthy > math.MaxUint32 {
		return 0, 0, fmt.Errorf("unhealthyThresholdCount and healthyThresholdCount must be in the range 0-%d", uint32(math.MaxUint32))
	}
	return uint32(unhealthy), uint32(healthy), nil
}

// healthTiming is a health check of a policy's interval and timeout (in
// seconds), each 0 for the default of the HTTP and TCP checks, and the
// default thresholds (setHealthThresholds sets a policy's).
func healthTiming(intervalSeconds, timeoutSeconds int64) (*ir.HealthCheck, error) {
	if intervalSeconds < 0 || timeoutSeconds < 0 {
		return nil, fmt.Errorf("intervalSeconds and timeoutSeconds must not be negative")
	}
	hc := &ir.HealthCheck{
		Interval: defaultHealthInterval, Timeout: defaultHealthTimeout,
		UnhealthyThreshold: defaultUnhealthyChecks, HealthyThreshold: defaultHealthyChecks,
	}
	if intervalSeconds > 0 {
		hc.Interval = time.Duration(min(intervalSeconds, math.MaxInt32)) * time.Second
	}
	if timeoutSeconds > 0 {
		hc.Timeout = time.Duration(min(timeoutSeconds, math.MaxInt32)) * time.Second
	}
	return hc, nil
}

// setHealthThresholds sets a policy's thresholds on hc, each 0 for the
// default.
func setHealthThresholds(hc *ir.HealthCheck, unhealthy, healthy uint32) {
	if unhealthy > 0 {
		hc.UnhealthyThreshold = unhealthy
	}
	if healthy > 0 {
		hc.HealthyThreshold = healthy
	}
}

// HealthPorts resolves a service's healthPort (a port of the Service, as
// port is) on the endpoints of its cluster: each endpoint address's port
// for it, and the ExternalName destination's.
func (b Stage) HealthPorts(be *Backend, healthPort int) (map[string]uint32, uint32, error) {
	hb, err := b.R.Backend(NsName(be.Service.Namespace, be.Service.Name), healthPort)
	if err != nil {
		return nil, 0, err
	}
	if hb.Service.Spec.ExternalName != "" {
		return nil, destinationPort(hb.Port), nil
	}
	ports := map[string]uint32{}
	for _, ep := range hb.Endpoints {
		ports[ep.Address] = ep.Port
	}
	return ports, 0, nil
}

// TCPHealthCheck validates a tcpproxy's healthCheckPolicy (a connection
// opened is a pass), with the defaults of the HTTP checks; nil for none.
func TCPHealthCheck(p *contourv1.TCPHealthCheckPolicy) (*ir.HealthCheck, error) {
	if p == nil {
		return nil, nil
	}
	hc, err := healthTiming(p.IntervalSeconds, p.TimeoutSeconds)
	if err != nil {
		return nil, err
	}
	setHealthThresholds(hc, p.UnhealthyThresholdCount, p.HealthyThresholdCount)
	hc.TCP = true
	return hc, nil
}
