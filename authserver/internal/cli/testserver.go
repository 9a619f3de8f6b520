package cli

import (
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/testserver"
)

const testserverLong = `testserver allows every request. It exists for tests and demos, and as the
smallest example of a backend.

On allow it sets these headers on the request sent upstream, after removing
any client-supplied copies (matched ignoring case and '-' versus '_'):

  Auth-Handler: testserver
  Auth-Context-<Key>: <value>   one per authPolicy context entry; the key
                                has every character other than letters,
                                digits and '-' replaced by '-' and is
                                capitalised: key1 -> Auth-Context-Key1

Denials and redirects for tests and demos are asked for by the operator,
never by the client, with context keys on the route or virtual host
(HTTPProxy authPolicy.context):

  testserver.portcullis.dev/deny: "403"
      deny with that status (4xx or 5xx) and a one-line text body
  testserver.portcullis.dev/redirect: "https://login.example/"
      302 Found with that Location (absolute http(s) URL or absolute path)

deny wins over redirect. A bad value, or an unknown key under
testserver.portcullis.dev/, denies with 500 and logs a warning: a typo must
not turn a deny into an allow.`

// testserverConfig is empty: the testserver has nothing to set.
type testserverConfig struct{}

var testserverBackend = backendSpec[testserverConfig]{
	name:  testserver.Name,
	short: "Allow every request (tests and demos); denials and redirects on operator request",
	long:  testserverLong,
	example: `  # plaintext (h2c) on loopback, metrics on :9090
  authserver testserver --address 127.0.0.1:9443

  # how Envoy should connect: TLS with client certificates
  authserver testserver --address :9443 --metrics-address :9090 \
    --tls-cert-path tls.crt --tls-key-path tls.key --tls-ca-path ca.crt`,
	defaults: func() testserverConfig { return testserverConfig{} },
	build: func(_ testserverConfig, e env) (authv3.AuthorizationServer, error) {
		return testserver.New(e.logger), nil
	},
}
