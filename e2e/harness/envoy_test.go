package harness

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// obj keeps the hand-written Envoy configs below readable.
type obj = map[string]any

// TestEnvoyProxiesToEcho runs the real Envoy with a static bootstrap whose
// listener routes everything to an Echo upstream.
func TestEnvoyProxiesToEcho(t *testing.T) {
	t.Parallel()
	echo := StartEcho(t, "echo")
	listen := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	bootstrap := writeBootstrap(t, []obj{httpListener("http", listen, nil)}, []obj{echoCluster("echo", echo, false)})

	start := time.Now()
	envoy := StartEnvoy(t, bootstrap)
	t.Logf("envoy LIVE in %v, admin at %s", time.Since(start).Round(time.Millisecond), envoy.AdminAddr)

	got := getEcho(t, HTTPClient(listen), "http://anything.example.com/hello/world?x=1")
	if got.Path != "/hello/world" || got.Query != "x=1" || got.Host != "anything.example.com" || got.Name != "echo" {
		t.Errorf("echo saw %+v", got)
	}
	if got.Headers.Get("X-Request-Id") == "" {
		t.Errorf("no x-request-id: the request did not go through Envoy? headers %v", got.Headers)
	}
	if n := echo.Requests(); n != 1 {
		t.Errorf("echo answered %d requests, want 1", n)
	}
	if last := echo.LastRequest(); last == nil || last.Path != "/hello/world" {
		t.Errorf("LastRequest = %+v", last)
	}

	Eventually(t, 5*time.Second, func() error {
		n, err := envoy.Stat("cluster.echo.upstream_rq_total")
		if err == nil && n != 1 {
			err = fmt.Errorf("cluster.echo.upstream_rq_total = %d, want 1", n)
		}
		return err
	})
	if _, err := envoy.Stat("no.such.stat"); err == nil {
		t.Errorf("Stat of an unknown stat did not fail")
	}
	dump, err := envoy.ConfigDump()
	if err != nil || !strings.Contains(string(dump), `"cluster_name": "echo"`) {
		t.Errorf("config dump (err %v) lacks the echo cluster:\n%.500s", err, dump)
	}

	// A stopped Envoy refuses connections; a restarted one serves again.
	envoy.Stop()
	if _, err := HTTPClient(listen).Get("http://x/"); err == nil {
		t.Errorf("request succeeded while Envoy was stopped")
	}
	envoy.Restart()
	getEcho(t, HTTPClient(listen), "http://again.example.com/after-restart")
	if n := echo.Requests(); n != 2 {
		t.Errorf("echo answered %d requests, want 2", n)
	}
}

// TestEnvoyHTTPSWithSNI serves a generated certificate on an SNI-matched
// filter chain and reaches it with HTTPSClient; the upstream speaks h2c.
func TestEnvoyHTTPSWithSNI(t *testing.T) {
	t.Parallel()
	ca := NewCA(t, "e2e test CA")
	kp := ca.Issue(t, "echo.example.com")
	echo := StartEcho(t, "secure-echo")
	listen := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	bootstrap := writeBootstrap(t,
		[]obj{httpListener("https", listen, &sniMatch{name: "echo.example.com", kp: kp})},
		[]obj{echoCluster("echo", echo, true)})
	StartEnvoy(t, bootstrap)

	client := HTTPSClient(ca.CertPEM, listen)
	resp, err := client.Get("https://echo.example.com/secure")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "echo.example.com" {
		t.Errorf("served certificate is for %q", cn)
	}
	got, err := DecodeEcho(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "/secure" || got.Host != "echo.example.com" || got.Proto != "HTTP/2.0" {
		t.Errorf("echo saw %+v (want /secure, echo.example.com, HTTP/2.0 i.e. h2c upstream)", got)
	}

	// No filter chain matches another SNI: the handshake fails.
	if _, err := client.Get("https://other.example.com/"); err == nil {
		t.Errorf("an unknown SNI got an answer")
	}
	// A client that does not trust the CA refuses the certificate.
	other := NewCA(t, "another CA")
	_, err = HTTPSClient(other.CertPEM, listen).Get("https://echo.example.com/")
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Errorf("untrusted CA: err = %v, want an unknown-authority error", err)
	}
}

// getEcho GETs url, expects 200 and decodes the Echo answer.
func getEcho(t *testing.T, c *http.Client, url string) *EchoRequest {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	got, err := DecodeEcho(body)
	if err != nil {
		t.Fatalf("GET %s: %v in %q", url, err, body)
	}
	return got
}

type sniMatch struct {
	name string
	kp   *KeyPair
}

// writeBootstrap writes a static Envoy bootstrap with the admin interface on
// a port Envoy picks.
func writeBootstrap(t *testing.T, listeners, clusters []obj) string {
	t.Helper()
	b, err := yaml.Marshal(obj{
		"admin":            obj{"address": socketAddress("127.0.0.1:0")},
		"static_resources": obj{"listeners": listeners, "clusters": clusters},
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

// httpListener routes everything to the cluster "echo"; with sni it serves
// TLS on one filter chain matched by server name.
func httpListener(name, addr string, sni *sniMatch) obj {
	hcm := obj{
		"name": "envoy.filters.network.http_connection_manager",
		"typed_config": obj{
			"@type":       "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
			"stat_prefix": name,
			"route_config": obj{"virtual_hosts": []obj{{
				"name": "all", "domains": []string{"*"},
				"routes": []obj{{"match": obj{"prefix": "/"}, "route": obj{"cluster": "echo"}}},
			}}},
			"http_filters": []obj{{
				"name":         "envoy.filters.http.router",
				"typed_config": obj{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
			}},
		},
	}
	chain := obj{"filters": []obj{hcm}}
	l := obj{"name": name, "address": socketAddress(addr), "filter_chains": []obj{chain}}
	if sni != nil {
		chain["filter_chain_match"] = obj{"server_names": []string{sni.name}}
		chain["transport_socket"] = obj{
			"name": "envoy.transport_sockets.tls",
			"typed_config": obj{
				"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				"common_tls_context": obj{"tls_certificates": []obj{{
					"certificate_chain": obj{"inline_string": string(sni.kp.CertPEM)},
					"private_key":       obj{"inline_string": string(sni.kp.KeyPEM)},
				}}},
			},
		}
		l["listener_filters"] = []obj{{
			"name":         "envoy.filters.listener.tls_inspector",
			"typed_config": obj{"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"},
		}}
	}
	return l
}

// echoCluster is a static cluster for e, over h2c when h2 is set.
func echoCluster(name string, e *Echo, h2 bool) obj {
	c := obj{
		"name":            name,
		"type":            "STATIC",
		"connect_timeout": "1s",
		"load_assignment": obj{
			"cluster_name": name,
			"endpoints": []obj{{"lb_endpoints": []obj{{
				"endpoint": obj{"address": socketAddress(e.Addr)},
			}}}},
		},
	}
	if h2 {
		c["typed_extension_protocol_options"] = obj{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": obj{
				"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
				"explicit_http_config": obj{"http2_protocol_options": obj{}},
			},
		}
	}
	return c
}

func socketAddress(hostPort string) obj {
	host, port, _ := net.SplitHostPort(hostPort)
	n, _ := strconv.Atoi(port)
	return obj{"socket_address": obj{"address": host, "port_value": n}}
}
