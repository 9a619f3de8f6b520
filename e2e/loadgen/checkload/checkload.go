// Package checkload drives Envoy's ext_authz v3 Check API for benchmarks:
// it builds Check requests the way Envoy does and turns a pool of gRPC
// connections into a loadgen.Do.
package checkload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/e2e/loadgen"
)

// Request describes the HTTP request Envoy would ask about.
type Request struct {
	Method, Scheme, Host, Path string
	Headers                    map[string]string // lower-case names, as Envoy sends them
	Context                    map[string]string // context_extensions
}

// Proto renders r as the CheckRequest Envoy sends.
func (r Request) Proto() *authv3.CheckRequest {
	method, scheme, path := r.Method, r.Scheme, r.Path
	if method == "" {
		method = "GET"
	}
	if scheme == "" {
		scheme = "https"
	}
	if path == "" {
		path = "/"
	}
	headers := map[string]string{":method": method, ":path": path, ":authority": r.Host, ":scheme": scheme}
	for k, v := range r.Headers {
		headers[k] = v
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
			SocketAddress: &corev3.SocketAddress{Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 50000}}}}},
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Id: "bench", Method: method, Scheme: scheme, Host: r.Host, Path: path, Protocol: "HTTP/1.1", Headers: headers,
		}},
		ContextExtensions: r.Context,
	}}
}

// Expect says which answers count as success.
type Expect int

const (
	// ExpectAny accepts any answer the server gives without a gRPC error.
	ExpectAny Expect = iota
	// ExpectOK wants an OK status (the request is allowed).
	ExpectOK
	// ExpectDenied wants a denial.
	ExpectDenied
)

// ParseExpect reads "any", "ok" or "denied".
func ParseExpect(s string) (Expect, error) {
	switch s {
	case "any", "":
		return ExpectAny, nil
	case "ok", "allow", "allowed":
		return ExpectOK, nil
	case "denied", "deny":
		return ExpectDenied, nil
	}
	return 0, fmt.Errorf("expect %q: want any, ok or denied", s)
}

// Do returns a loadgen.Do that sends req over the connections, spreading
// workers across them (one HTTP/2 connection serialises on its own
// flow control; several behave like Envoy's per-worker connections).
func Do(conns []*grpc.ClientConn, req *authv3.CheckRequest, expect Expect) loadgen.Do {
	clients := make([]authv3.AuthorizationClient, len(conns))
	for i, c := range conns {
		clients[i] = authv3.NewAuthorizationClient(c)
	}
	return func(ctx context.Context, worker int) error {
		resp, err := clients[worker%len(clients)].Check(ctx, req)
		if err != nil {
			return err
		}
		code := codes.Code(resp.GetStatus().GetCode())
		switch {
		case expect == ExpectOK && code != codes.OK:
			return fmt.Errorf("denied (%s): %s", code, resp.GetStatus().GetMessage())
		case expect == ExpectDenied && code == codes.OK:
			return fmt.Errorf("allowed, want a denial")
		}
		return nil
	}
}

// Dial opens n connections to addr, over TLS verified with caFile when it is
// set, otherwise plaintext (h2c).
func Dial(addr string, n int, caFile string) ([]*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificates", caFile)
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	conns := make([]*grpc.ClientConn, 0, max(n, 1))
	for range max(n, 1) {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			Close(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// Close closes every connection.
func Close(conns []*grpc.ClientConn) {
	for _, c := range conns {
		_ = c.Close()
	}
}
