package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// startTLSEcho serves an Echo over TLS (HTTP/1.1) with the key pair on
// 127.0.0.1, stopped when the test ends.
func startTLSEcho(t *testing.T, name string, kp *harness.KeyPair) *harness.Echo {
	t.Helper()
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	e := &harness.Echo{Name: name, Addr: l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: e}
	go func() { _ = srv.Serve(l) }() // returns when the cleanup closes it
	t.Cleanup(func() { srv.Close() })
	return e
}

// TestHTTPProxyUpstreamSubjectNames: validation.subjectNames through the
// file provider into the real Envoy: an upstream whose certificate (of
// the validation's CA) presents the second of the names is reached, one
// presenting none of them fails the handshake (503), and so does one
// presenting a listed name but signed by another CA.
func TestHTTPProxyUpstreamSubjectNames(t *testing.T) {
	ca, otherCA := harness.NewCA(t, "upstream-ca"), harness.NewCA(t, "other-ca")
	good := startTLSEcho(t, "good", ca.Issue(t, "good.upstream.test"))
	unnamed := startTLSEcho(t, "unnamed", ca.Issue(t, "unlisted.upstream.test"))
	foreign := startTLSEcho(t, "foreign", otherCA.Issue(t, "good.upstream.test"))
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)

	validation := &contourv1.UpstreamValidation{
		CACertificate: "upstream-ca",
		SubjectName:   "primary.upstream.test",
		SubjectNames:  []string{"primary.upstream.test", "good.upstream.test"},
	}
	route := func(prefix, svc string) contourv1.Route {
		return contourv1.Route{
			Conditions: []contourv1.MatchCondition{{Prefix: prefix}},
			Services:   []contourv1.Service{{Name: svc, Port: 443, Protocol: ptr.To("tls"), UpstreamValidation: validation}},
		}
	}
	all := []client.Object{ca.Secret("default", "upstream-ca")}
	for _, e := range []*harness.Echo{good, unnamed, foreign} {
		all = append(all, harness.LoopbackEndpointSlice("default", e.Name, 443, e.Port)...)
	}
	all = append(all, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "names"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "names.example.com"},
		Routes:      []contourv1.Route{route("/good", "good"), route("/unnamed", "unnamed"), route("/foreign", "foreign")},
	}})
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://names.example.com/good"), http.StatusOK)
	if got.Name != "good" {
		t.Fatalf("answered by %q, want good", got.Name)
	}
	for _, tc := range []struct{ path, why string }{
		{"/unnamed", "a certificate presenting none of the names"},
		{"/foreign", "a listed name signed by another CA"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := doRequest(t, c, harness.MustRequest(t, "http://names.example.com"+tc.path))
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s: status %d (%s), want 503", tc.why, resp.StatusCode, body)
			}
		})
	}
	if n := unnamed.Requests() + foreign.Requests(); n != 0 {
		t.Errorf("the refused upstreams got %d requests", n)
	}
}

// mtlsClient is an HTTPS client trusting caPEM and presenting kp.
func mtlsClient(t *testing.T, caPEM []byte, resolveTo string, kp *harness.KeyPair) *http.Client {
	t.Helper()
	c := harness.HTTPSClient(caPEM, resolveTo)
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{cert}
	return c
}

// TestHTTPProxyClientCRL: clientValidation.crlSecret through the file
// provider into the real Envoy: a client whose certificate the CRL revokes
// fails the handshake and never reaches the upstream; another of the same
// CA is served. A new CRL revoking the second client too refuses it
// (the CRL travels over SDS).
func TestHTTPProxyClientCRL(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	serverCA, clientCA := harness.NewCA(t, "server-ca"), harness.NewCA(t, "client-ca")
	good, revoked := clientCA.Issue(t, "good-client"), clientCA.Issue(t, "revoked-client")
	crlSecret := func(revoked ...*harness.KeyPair) client.Object {
		s := clientCA.Secret("default", "client-crl")
		s.Data = map[string][]byte{"crl.pem": clientCA.CRL(t, revoked...)}
		return s
	}
	all := []client.Object{
		serverCA.Issue(t, "crl.example.com").Secret("default", "server"),
		clientCA.Secret("default", "client-ca"),
		crlSecret(revoked),
	}
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crl"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "crl.example.com", TLS: &contourv1.TLS{
			SecretName: "server",
			ClientValidation: &contourv1.DownstreamValidation{
				CACertificate:             "client-ca",
				CertificateRevocationList: "client-crl",
			},
		}},
		Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
	}})
	d := harness.Dir(dir)
	if err := d.Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	goodClient := mtlsClient(t, serverCA.CertPEM, httpsAddr, good)
	revokedClient := mtlsClient(t, serverCA.CertPEM, httpsAddr, revoked)
	harness.EventuallyEcho(t, goodClient, harness.MustRequest(t, "https://crl.example.com/"), http.StatusOK)

	refused := func(t *testing.T, c *http.Client, who string) {
		t.Helper()
		before := echo.Requests()
		resp, err := c.Do(harness.MustRequest(t, "https://crl.example.com/"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: status %d, want the handshake refused", who, resp.StatusCode)
		}
		if n := echo.Requests() - before; n != 0 {
			t.Errorf("%s reached the upstream %d times", who, n)
		}
	}
	refused(t, revokedClient, "the revoked client")
	if _, err := harness.GetEcho(goodClient, harness.MustRequest(t, "https://crl.example.com/"), http.StatusOK); err != nil {
		t.Fatalf("the client the CRL does not revoke: %v", err)
	}

	if err := d.Apply(context.Background(), crlSecret(revoked, good)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := goodClient.Do(harness.MustRequest(t, "https://crl.example.com/"))
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the client revoked by the new CRL is still served")
		}
		time.Sleep(200 * time.Millisecond)
	}
	refused(t, goodClient, "the client revoked by the new CRL")
}

// TestHTTPProxyForwardClientCertificate: clientValidation.
// forwardClientCertificate through the file provider into the real Envoy:
// the upstream of a host forwarding the subject, the certificate and the
// DNS SANs gets an x-forwarded-client-cert with those parts of the
// client's certificate (and not the URI or the chain), in place of one the
// client sent; a host without it passes no such header on.
func TestHTTPProxyForwardClientCertificate(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	serverCA, clientCA := harness.NewCA(t, "server-ca"), harness.NewCA(t, "client-ca")
	kp := clientCA.Issue(t, "xfcc-client", "xfcc-client.example.com")
	host := func(name string, fwd *contourv1.ClientCertificateDetails) client.Object {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", TLS: &contourv1.TLS{
				SecretName:       "server",
				ClientValidation: &contourv1.DownstreamValidation{CACertificate: "client-ca", ForwardClientCertificate: fwd},
			}},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}}
	}
	all := []client.Object{
		serverCA.Issue(t, "xfcc.example.com", "plain.example.com").Secret("default", "server"),
		clientCA.Secret("default", "client-ca"),
		host("xfcc", &contourv1.ClientCertificateDetails{Subject: true, Cert: true, DNS: true}),
		host("plain", nil),
	}
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := mtlsClient(t, serverCA.CertPEM, httpsAddr, kp)
	get := func(host string) string {
		t.Helper()
		req := harness.MustRequest(t, "https://"+host+"/")
		req.Header.Set("X-Forwarded-Client-Cert", "By=spoofed;Subject=\"CN=admin\"")
		got := harness.EventuallyEcho(t, c, req, http.StatusOK)
		return strings.Join(got.Headers.Values("X-Forwarded-Client-Cert"), ",")
	}

	xfcc := get("xfcc.example.com")
	leaf := url.QueryEscape(string(kp.CertPEM))
	for _, want := range []string{`Hash=`, `Subject="CN=xfcc-client,`, `DNS=xfcc-client.example.com`, `Cert="`} {
		if !strings.Contains(xfcc, want) {
			t.Errorf("x-forwarded-client-cert %q lacks %s", xfcc, want)
		}
	}
	if !strings.Contains(strings.ReplaceAll(xfcc, "%20", "+"), strings.ReplaceAll(leaf, "%20", "+")) {
		t.Errorf("x-forwarded-client-cert %q does not carry the client's certificate", xfcc)
	}
	for _, unwanted := range []string{"spoofed", "CN=admin", "Chain=", "URI="} {
		if strings.Contains(xfcc, unwanted) {
			t.Errorf("x-forwarded-client-cert %q has %s", xfcc, unwanted)
		}
	}
	if plain := get("plain.example.com"); plain != "" {
		t.Errorf("a host without forwardClientCertificate passed x-forwarded-client-cert %q on", plain)
	}
}

// TestHTTPProxyClientCertificateNotVerified: clientValidation with a
// caSecret and skipClientCertValidation, Contour's "client certificates
// are required on requests, but not verified", through the file provider
// into the real Envoy: a client presenting a certificate of a CA Envoy does
// not trust is served (and its subject forwarded), as is one of the
// caSecret's CA; a client presenting none is refused at the handshake and
// never reaches the upstream.
func TestHTTPProxyClientCertificateNotVerified(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	serverCA, clientCA, unknownCA := harness.NewCA(t, "server-ca"), harness.NewCA(t, "client-ca"), harness.NewCA(t, "unknown-ca")
	all := []client.Object{
		serverCA.Issue(t, "unverified.example.com").Secret("default", "server"),
		clientCA.Secret("default", "client-ca"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unverified"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "unverified.example.com", TLS: &contourv1.TLS{
				SecretName: "server",
				ClientValidation: &contourv1.DownstreamValidation{
					CACertificate:            "client-ca",
					SkipClientCertValidation: true,
					ForwardClientCertificate: &contourv1.ClientCertificateDetails{Subject: true},
				},
			}},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}},
	}
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ who, cn string }{
		{"a client of an unknown CA", "stranger"},
		{"a client of the caSecret's CA", "member"},
	} {
		ca := unknownCA
		if tc.cn == "member" {
			ca = clientCA
		}
		c := alwaysPresentingClient(t, serverCA.CertPEM, httpsAddr, ca.Issue(t, tc.cn))
		got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "https://unverified.example.com/"), http.StatusOK)
		if xfcc := strings.Join(got.Headers.Values("X-Forwarded-Client-Cert"), ","); !strings.Contains(xfcc, `Subject="CN=`+tc.cn) {
			t.Errorf("%s: x-forwarded-client-cert %q lacks its subject", tc.who, xfcc)
		}
	}

	before := echo.Requests()
	resp, err := harness.HTTPSClient(serverCA.CertPEM, httpsAddr).Do(harness.MustRequest(t, "https://unverified.example.com/"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate: status %d, want the handshake refused", resp.StatusCode)
	}
	if n := echo.Requests() - before; n != 0 {
		t.Errorf("a client without a certificate reached the upstream %d times", n)
	}
}

// alwaysPresentingClient is mtlsClient presenting kp whatever CAs Envoy
// names in its certificate request (from the caSecret), as curl and
// OpenSSL clients do: Go's client would otherwise send no certificate of
// another CA.
func alwaysPresentingClient(t *testing.T, caPEM []byte, resolveTo string, kp *harness.KeyPair) *http.Client {
	t.Helper()
	c := harness.HTTPSClient(caPEM, resolveTo)
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &cert, nil
	}
	return c
}
