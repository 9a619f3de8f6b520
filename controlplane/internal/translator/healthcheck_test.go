package translator

import (
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestHealthChecks(t *testing.T) {
	if got := healthChecks(nil); got != nil {
		t.Errorf("no check: %v", got)
	}
	grpc := healthChecks(&ir.HealthCheck{ServiceName: "s", Authority: "a", Interval: time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2})
	if g := grpc[0].GetGrpcHealthCheck(); g.GetServiceName() != "s" || g.GetAuthority() != "a" {
		t.Errorf("gRPC check %v", grpc)
	}
	http := healthChecks(&ir.HealthCheck{HTTP: &ir.HTTPHealthCheck{Path: "/h", Host: "x", ExpectedStatuses: []ir.StatusRange{{Start: 200, End: 300}}}, Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 2})
	h := http[0].GetHttpHealthCheck()
	if h.GetPath() != "/h" || h.GetHost() != "x" || len(h.GetExpectedStatuses()) != 1 || h.GetExpectedStatuses()[0].GetStart() != 200 || h.GetExpectedStatuses()[0].GetEnd() != 300 {
		t.Errorf("HTTP check %v", http)
	}
	if http[0].GetInterval().AsDuration() != 5*time.Second || http[0].GetUnhealthyThreshold().GetValue() != 3 {
		t.Errorf("HTTP check %v", http)
	}
	c := cluster(&ir.Cluster{Name: "c", DNSName: "x.example.com", DNSPort: 443, DNSHealthPort: 8443})
	if p := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetHealthCheckConfig().GetPortValue(); p != 8443 {
		t.Errorf("DNS health port %d", p)
	}
	cla := loadAssignment(&ir.Cluster{Name: "c", Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 80, HealthPort: 90}, {Address: "10.0.0.2", Port: 80}}})
	eps := cla.GetEndpoints()[0].GetLbEndpoints()
	if eps[0].GetEndpoint().GetHealthCheckConfig().GetPortValue() != 90 || eps[1].GetEndpoint().GetHealthCheckConfig() != nil {
		t.Errorf("health ports %v", eps)
	}
}
