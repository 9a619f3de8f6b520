package command

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof serves net/http/pprof on its own listener, apart from the
// metrics port: profiles show memory contents and cost CPU to take.
func ServePprof(addr string) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Serve returns ErrServerClosed once stopped; it has nobody to report
	// another error to, and profiles are a debugging aid, not the service.
	go func() { _ = srv.Serve(lis) }()
	// Close's error is the listener's, already closed or not: nothing to do.
	return func() { _ = srv.Close() }, nil
}
