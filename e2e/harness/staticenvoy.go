package harness

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"
)

// StaticListener is a plain-HTTP Envoy listener for WriteStaticBootstrap.
type StaticListener struct {
	Name string
	Addr string // 127.0.0.1:port
	// HTTPFilters run before the router, e.g. ExtProcFilter(...).
	HTTPFilters []map[string]any
	// Routes of the single "*" virtual host; nil routes everything to the
	// cluster "echo".
	Routes []map[string]any
}

// StaticCluster is a single-endpoint cluster; HTTP2 makes it speak h2c (a
// gRPC server, for example).
type StaticCluster struct {
	Name  string
	Addr  string
	HTTP2 bool
}

// WriteStaticBootstrap writes a static Envoy bootstrap (admin on a port
// Envoy picks) for tests that need Envoy features the control plane does
// not generate yet, and returns its path.
func WriteStaticBootstrap(t testing.TB, listeners []StaticListener, clusters []StaticCluster) string {
	t.Helper()
	var ls, cs []map[string]any
	for _, l := range listeners {
		routes := l.Routes
		if routes == nil {
			routes = []map[string]any{{"match": map[string]any{"prefix": "/"}, "route": map[string]any{"cluster": "echo"}}}
		}
		filters := append(append([]map[string]any{}, l.HTTPFilters...), map[string]any{
			"name":         "envoy.filters.http.router",
			"typed_config": map[string]any{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
		})
		ls = append(ls, map[string]any{
			"name":    l.Name,
			"address": staticAddress(l.Addr),
			"filter_chains": []any{map[string]any{"filters": []any{map[string]any{
				"name": "envoy.filters.network.http_connection_manager",
				"typed_config": map[string]any{
					"@type":        "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
					"stat_prefix":  l.Name,
					"route_config": map[string]any{"virtual_hosts": []any{map[string]any{"name": "all", "domains": []string{"*"}, "routes": routes}}},
					"http_filters": filters,
				},
			}}}},
		})
	}
	for _, c := range clusters {
		m := map[string]any{
			"name": c.Name, "type": "STATIC", "connect_timeout": "1s",
			"load_assignment": map[string]any{"cluster_name": c.Name, "endpoints": []any{map[string]any{
				"lb_endpoints": []any{map[string]any{"endpoint": map[string]any{"address": staticAddress(c.Addr)}}},
			}}},
		}
		if c.HTTP2 {
			m["typed_extension_protocol_options"] = map[string]any{
				"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": map[string]any{
					"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
					"explicit_http_config": map[string]any{"http2_protocol_options": map[string]any{}},
				},
			}
		}
		cs = append(cs, m)
	}
	b, err := yaml.Marshal(map[string]any{
		"admin":            map[string]any{"address": staticAddress("127.0.0.1:0")},
		"static_resources": map[string]any{"listeners": ls, "clusters": cs},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ExtProcFilter is an ext_proc HTTP filter talking to cluster; fields adds
// or overrides ExternalProcessor fields (processing_mode, message_timeout,
// failure_mode_allow, allow_mode_override ...).
func ExtProcFilter(cluster string, fields map[string]any) map[string]any {
	cfg := map[string]any{
		"@type":        "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
		"grpc_service": map[string]any{"envoy_grpc": map[string]any{"cluster_name": cluster}},
	}
	for k, v := range fields {
		cfg[k] = v
	}
	return map[string]any{"name": "envoy.filters.http.ext_proc", "typed_config": cfg}
}

func staticAddress(hostPort string) map[string]any {
	host, port, _ := net.SplitHostPort(hostPort)
	n, _ := strconv.Atoi(port)
	return map[string]any{"socket_address": map[string]any{"address": host, "port_value": n}}
}
