package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCA is a CA certificate (the golden cases' client-ca).
const testCA = `-----BEGIN CERTIFICATE-----
MIIBkDCCATegAwIBAgIUTBsKfZQRcon7pQprVd/Tt44zAu4wCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwScG9ydGN1bGxpcy10ZXN0LWNhMCAXDTI2MTEyMjAzMjgwOFoY
DzIxMjYxMDI5MDMyODA4WjAdMRswGQYDVQQDDBJwb3J0Y3VsbGlzLXRlc3QtY2Ew
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASlG1mPjuvHD/4GWpVUAvVxVoG8n5V3
TFHymUbKhmVrdsHf4C4bvm7iqVPue8MZ/UlHZwx51l/YquBkfT8cuM2ao1MwUTAd
BgNVHQ4EFgQUc5oQe+22jdeCU3v64c6om9jm+VQwHwYDVR0jBBgwFoAUc5oQe+22
jdeCU3v64c6om9jm+VQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBE
AiB80jzlGwTe+RpX9MefAy28c9nM8OJSskmlK1ZuzpPogwIgYeTUl8n+Z1p2Vjjz
MgIQa4GZQHLhx60hXnfDQh2qcjw=
-----END CERTIFICATE-----
`

// TestSystemCAFile: --system-ca-file's bundle reaches Envoy as the
// system-ca secret that an https remoteJWKS without validation verifies
// against; other blocks are dropped, a file without certificates or
// missing stops translate, and "none" refuses such a URI.
func TestSystemCAFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bundle := write("bundle.pem", "# a comment\n-----BEGIN TRUSTED CERTIFICATE-----\nAAAA\n-----END TRUSTED CERTIFICATE-----\n"+testCA)
	empty := write("empty.pem", "# nothing\n")
	in := write("in.yaml", `apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: jwt, namespace: default}
spec:
  virtualhost:
    fqdn: jwt.example.com
    tls: {secretName: echo}
    jwtProviders:
    - name: cognito
      default: true
      remoteJWKS: {uri: "https://cognito-idp.eu-west-1.amazonaws.com/pool/.well-known/jwks.json"}
  routes:
  - services: [{name: echo, port: 80}]
`)
	// The golden cases' shared objects: the echo Service and certificate.
	const common = "../../internal/pipeline/testdata/common"
	if b, err := loadSystemCA(bundle); err != nil || string(b) != testCA {
		t.Errorf("loadSystemCA(bundle) = %q, %v; want the certificate alone", b, err)
	}
	for _, tc := range []struct {
		name, flag string
		want       []string
		wantErr    string
	}{
		{"a bundle: verified against it", bundle, []string{`"name": "system-ca"`, `"exact": "cognito-idp.eu-west-1.amazonaws.com"`, `"inlineBytes": "` + base64.StdEncoding.EncodeToString([]byte(testCA)) + `"`}, ""},
		{"none: refused", noSystemCA, []string{"this control plane has no system trust roots"}, ""},
		{"no certificate", empty, nil, "--system-ca-file: " + empty + ": no PEM certificate"},
		{"missing file", filepath.Join(dir, "missing.pem"), nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run("translate", "-o", "json", "--system-ca-file", tc.flag, "-f", common, "-f", in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil && !strings.Contains(out, "status") {
				t.Fatalf("%v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
