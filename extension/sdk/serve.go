package sdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// ServiceName is the gRPC service name of the extension hooks, which the
// health service reports on (as well as on "", the whole server).
const ServiceName = "portcullis.extension.v1alpha1.ExtensionServer"

// MaxMessageSize is the largest request and answer Serve accepts and
// sends by default: Portcullis's default (the registration's
// maxMessageSize), not gRPC's 4 MiB, which the HTTPS listener of a few
// thousand hosts exceeds. grpc.MaxRecvMsgSize and grpc.MaxSendMsgSize in
// opts override it.
const MaxMessageSize = 64 << 20

// ShutdownGrace bounds how long Serve waits, once its context ends, for
// calls in progress to finish before it closes their connections.
const ShutdownGrace = 10 * time.Second

// Serve serves srv (a *Server, or a type embedding one) on lis until ctx
// ends, then stops gracefully and returns nil; it returns the error that
// stopped serving otherwise. It closes lis.
//
// The gRPC server has opts (e.g. grpc.Creds for TLS: Portcullis connects
// with the TLS settings of the extension's registration), messages up to
// MaxMessageSize unless opts say otherwise, the gRPC health
// service (SERVING for "" and ServiceName until shutdown begins), and
// turns a panic of a hook into an Internal error of that call.
func Serve(ctx context.Context, lis net.Listener, srv v1alpha1.ExtensionServerServer, opts ...grpc.ServerOption) error {
	opts = append([]grpc.ServerOption{grpc.ChainUnaryInterceptor(recoverPanics),
		grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize)}, opts...)
	gs := grpc.NewServer(opts...)
	v1alpha1.RegisterExtensionServerServer(gs, srv)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)

	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Health watchers learn first. GracefulStop waits for their Watch
	// streams too, which only end when the client goes: hence the bound.
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(ShutdownGrace):
		gs.Stop()
		<-stopped
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// recoverPanics turns a panic of a handler into an Internal error.
func recoverPanics(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = status.Error(codes.Internal, fmt.Sprintf("%s: panic: %v", info.FullMethod, p))
		}
	}()
	return handler(ctx, req)
}
