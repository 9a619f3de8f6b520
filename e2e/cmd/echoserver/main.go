// Command echoserver is the demo's upstream: it answers every request with
// the JSON of the request it received (method, path, host, headers), so that
// a user sees exactly what Envoy forwarded, e.g. the Auth-* headers.
//
// With --grpc it is a gRPC upstream (h2c) instead: grpc.health.v1.Health and
// grpc.testing.TestService, whose UnaryCall answers with its --name as
// server_id (see harness.GRPCEcho).
package main

import (
	"flag"
	"log"
	"net"
	"net/http"

	"github.com/portcullis/portcullis/e2e/harness"
)

func main() {
	addr := flag.String("address", "127.0.0.1:19000", "address to listen on")
	name := flag.String("name", "echo", "name reported in each answer")
	grpcMode := flag.Bool("grpc", false, "serve gRPC (h2c): grpc.health.v1.Health and grpc.testing.TestService")
	flag.Parse()
	if *grpcMode {
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("echoserver (gRPC) listening on %s", l.Addr())
		log.Fatal(harness.NewGRPCServer(&harness.GRPCEcho{Name: *name}).Serve(l))
	}
	srv := &http.Server{Addr: *addr, Handler: &harness.Echo{Name: *name}, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Printf("echoserver listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
