// Command echoserver is the demo's upstream: it answers every request with
// the JSON of the request it received (method, path, host, headers), so that
// a user sees exactly what Envoy forwarded, e.g. the Auth-* headers.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/portcullis/portcullis/e2e/harness"
)

func main() {
	addr := flag.String("address", "127.0.0.1:19000", "address to listen on")
	name := flag.String("name", "echo", "name reported in each answer")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: &harness.Echo{Name: *name}, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Printf("echoserver listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
