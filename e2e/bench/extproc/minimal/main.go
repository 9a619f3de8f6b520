// Command minimal is the benchmark's reference ext_proc server: the
// generated gRPC stubs and nothing else (no SDK, no interceptors, default
// gRPC options), answering every message with CONTINUE. It is what any
// Go processor costs at least, so extprocserver is measured against it.
package main

import (
	"errors"
	"flag"
	"io"
	"log"
	"net"

	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
)

type server struct {
	extprocsvcv3.UnimplementedExternalProcessorServer
}

func (server) Process(stream extprocsvcv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := &extprocsvcv3.ProcessingResponse{}
		switch req.GetRequest().(type) {
		case *extprocsvcv3.ProcessingRequest_RequestHeaders:
			resp.Response = &extprocsvcv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvcv3.HeadersResponse{}}
		case *extprocsvcv3.ProcessingRequest_ResponseHeaders:
			resp.Response = &extprocsvcv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvcv3.HeadersResponse{}}
		case *extprocsvcv3.ProcessingRequest_RequestBody:
			resp.Response = &extprocsvcv3.ProcessingResponse_RequestBody{RequestBody: &extprocsvcv3.BodyResponse{}}
		case *extprocsvcv3.ProcessingRequest_ResponseBody:
			resp.Response = &extprocsvcv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocsvcv3.BodyResponse{}}
		case *extprocsvcv3.ProcessingRequest_RequestTrailers:
			resp.Response = &extprocsvcv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocsvcv3.TrailersResponse{}}
		case *extprocsvcv3.ProcessingRequest_ResponseTrailers:
			resp.Response = &extprocsvcv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocsvcv3.TrailersResponse{}}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func main() {
	addr := flag.String("address", "127.0.0.1:9443", "gRPC listen address")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	extprocsvcv3.RegisterExternalProcessorServer(s, server{})
	log.Fatal(s.Serve(lis))
}
