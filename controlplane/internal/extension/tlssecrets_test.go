package extension

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/extension/sdk"
)

// TLS from Secrets (Envoy Gateway's certificateRef): the CAs and the
// client certificate come from the build's Secrets, each connection's
// handshake reading the latest; a missing or wrong one fails the calls,
// saying which.
func TestDialTLSFromSecrets(t *testing.T) {
	caKey, caCert, caPEM := newCert(t, "test CA", nil, nil)
	_, _, otherCAPEM := newCert(t, "another CA", nil, nil)
	srvKey, srvCert, _ := newCert(t, "ext.test", caCert, caKey)
	cliKey, _, cliPEM := newCert(t, "portcullis", caCert, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
	}
	addr, _ := serve(t, &sdk.Server{HTTPListenerModify: listenerBuffer}, grpc.Creds(credentials.NewTLS(serverTLS)))
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "vendor", Name: name}, Data: data}
	}
	good := map[string]*corev1.Secret{
		"ca":     secret("ca", map[string][]byte{"ca.crt": caPEM}),
		"client": secret("client", map[string][]byte{corev1.TLSCertKey: cliPEM, corev1.TLSPrivateKeyKey: keyPEM(t, cliKey)}),
	}
	for _, tc := range []struct {
		name    string
		secrets map[string]*corev1.Secret
		want    string
	}{
		{"from Secrets", good, ""},
		{"no CA Secret", map[string]*corev1.Secret{"client": good["client"]}, "Secret vendor/ca not found"},
		{"another CA", map[string]*corev1.Secret{"ca": secret("ca", map[string][]byte{"ca.crt": otherCAPEM}), "client": good["client"]}, "tls.caSecret vendor/ca"},
		{"no client certificate", map[string]*corev1.Secret{"ca": good["ca"]}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := Registration{Name: "ext", Address: addr, Hooks: []Hook{HookPostHTTPListenerModify},
				TLS: &TLS{CASecret: "vendor/ca", ClientSecret: "vendor/client", ServerName: "ext.test"}}
			chain, closeConns, err := Connect([]Registration{reg})
			if err != nil {
				t.Fatal(err)
			}
			defer closeConns()
			r := chain.Runners()[0]
			r.SetSecrets(func(ns, name string) *corev1.Secret {
				if ns != "vendor" {
					return nil
				}
				return tc.secrets[name]
			})
			out, failures := r.Apply(context.Background(), translate(t, fixtureYAML), Refs{})
			switch {
			case tc.name == "no client certificate":
				// The server asks for one: the handshake fails.
				if len(failures) == 0 {
					t.Error("calls succeeded without the client certificate the server requires")
				}
			case tc.want == "" && (out == nil || len(failures) > 0):
				t.Errorf("failures %v", failures)
			case tc.want != "" && (len(failures) == 0 || !strings.Contains(failures[0].Message, tc.want)):
				t.Errorf("failures %v, want one saying %q", failures, tc.want)
			}
		})
	}
}
