// Command echoserver is the demo's upstream: it answers every request with
// the JSON of the request it received (method, path, host, headers), so that
// a user sees exactly what Envoy forwarded, e.g. the Auth-* headers.
//
// With --grpc it is a gRPC upstream (h2c) instead: grpc.health.v1.Health and
// grpc.testing.TestService, whose UnaryCall answers with its --name as
// server_id (see harness.GRPCEcho).
//
// With --dial it is a client instead: it opens a TCP connection to each of
// its addresses, prints "ADDRESS open" or "ADDRESS closed: ERROR" for each,
// and exits (the cluster tests' probe of NetworkPolicies from a Pod).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

func main() {
	addr := flag.String("address", "127.0.0.1:19000", "address to listen on")
	name := flag.String("name", "echo", "name reported in each answer")
	grpcMode := flag.Bool("grpc", false, "serve gRPC (h2c): grpc.health.v1.Health and grpc.testing.TestService")
	dial := flag.String("dial", "", "comma-separated host:port addresses to connect to (a client: prints whether each is open, then exits)")
	dialTimeout := flag.Duration("dial-timeout", 2*time.Second, "how long --dial waits for each connection")
	flag.Parse()
	if *dial != "" {
		for _, a := range strings.Split(*dial, ",") {
			c, err := net.DialTimeout("tcp", a, *dialTimeout)
			if err != nil {
				fmt.Printf("%s closed: %v\n", a, err)
				continue
			}
			c.Close()
			fmt.Printf("%s open\n", a)
		}
		return
	}
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
