package htpasswd

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
)

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func basic(user, password string) string { return "Basic " + base64Std(user+":"+password) }

// newServer returns a started Server with the given htpasswd files' content
// (one file each) and its registry.
func newServer(t testing.TB, opts Options, files ...string) (*Server, *prometheus.Registry, []string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registry = reg
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize, opts.CacheTTL = DefaultCacheSize, DefaultCacheTTL
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i, content := range files {
		p := filepath.Join(t.TempDir(), "htpasswd"+string(rune('a'+i)))
		writeFile(t, p, content)
		if err := s.AddFile(p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	s.Start()
	return s, reg, paths
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	// Write then rename, as tools and the kubelet do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func checkReq(authorization string, ext map[string]string, extra map[string]string) *authv3.CheckRequest {
	headers := map[string]string{":path": "/", "host": "app.example"}
	if authorization != "" {
		headers["authorization"] = authorization
	}
	for k, v := range extra {
		headers[k] = v
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		ContextExtensions: ext,
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Host: "app.example", Path: "/", Headers: headers,
		}},
	}}
}

// answer is a Check response reduced to what tests compare.
type answer struct {
	status  int
	headers map[string]string // upstream headers on allow, response headers on deny
	remove  []string
}

func doCheck(t testing.TB, s *Server, req *authv3.CheckRequest) answer {
	t.Helper()
	resp, err := s.Check(context.Background(), req)
	if err != nil {
		t.Fatalf("Check returned a gRPC error: %v", err)
	}
	a := answer{headers: map[string]string{}}
	collect := func(hs []*corev3.HeaderValueOption) {
		for _, h := range hs {
			a.headers[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
		}
	}
	if ok := resp.GetOkResponse(); resp.GetStatus().GetCode() == 0 {
		a.status = 200
		collect(ok.GetHeaders())
		a.remove = ok.GetHeadersToRemove()
	} else {
		a.status = int(resp.GetDeniedResponse().GetStatus().GetCode())
		collect(resp.GetDeniedResponse().GetHeaders())
	}
	return a
}
