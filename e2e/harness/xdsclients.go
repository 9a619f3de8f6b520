package harness

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// DistinctRoutesProxy is root HTTPProxy i (host-<i>.slow.example.com in
// namespace default) with six routes of its own to the Service echo:
// hosts the translator cannot merge into one virtual host, so that
// ingress_http grows by about 400 bytes per host.
func DistinctRoutesProxy(i int) *contourv1.HTTPProxy {
	var routes []contourv1.Route
	for j := range 5 {
		routes = append(routes, contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/host-%d/path-%d", i, j)}},
			Services: []contourv1.Service{{Name: "echo", Port: 80}}})
	}
	routes = append(routes, contourv1.Route{Services: []contourv1.Service{{Name: "echo", Port: 80}}})
	return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("host-%d", i)},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: fmt.Sprintf("host-%d.slow.example.com", i)}, Routes: routes}}
}

// SlowXDSClient opens an xDS stream to xds that subscribes to the route
// configuration name and then neither reads nor answers anything (state
// of the world for even i, delta for odd), on a connection of its own,
// closed when t ends: a stuck or hostile Envoy.
func SlowXDSClient(ctx context.Context, t testing.TB, xds, name string, i int) {
	t.Helper()
	conn, err := grpc.NewClient(xds, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	node := &corev3.Node{Id: fmt.Sprintf("slow-%d", i), Cluster: "slow"}
	if i%2 == 0 {
		st, err := ads.StreamAggregatedResources(ctx)
		if err == nil {
			err = st.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resourcev3.RouteType, ResourceNames: []string{name}})
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	st, err := ads.DeltaAggregatedResources(ctx)
	if err == nil {
		err = st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: []string{name}})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// NACKStorm opens streams state-of-the-world streams to xds, each on a
// connection of its own, subscribes each to the clusters and rejects
// what it was sent nacks times with a message of size bytes. The
// streams stay open until ctx ends.
func NACKStorm(ctx context.Context, t testing.TB, xds string, streams, nacks, size int) {
	t.Helper()
	text := strings.Repeat("k", size)
	for s := range streams {
		conn, err := grpc.NewClient(xds, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err == nil {
			err = st.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: fmt.Sprintf("storm-%d", s)}, TypeUrl: resourcev3.ClusterType})
		}
		if err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for { // drain what else it is sent
				if _, err := st.Recv(); err != nil {
					return
				}
			}
		}()
		for i := range nacks {
			if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: resp.Nonce, VersionInfo: "1",
				ErrorDetail: &rpcstatus.Status{Message: strconv.Itoa(i) + " " + text}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ProcStatus reads a size field (VmRSS, VmHWM) of /proc/<pid>/status, in
// bytes.
func ProcStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
