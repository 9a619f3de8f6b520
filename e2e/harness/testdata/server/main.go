// Command server is a stand-in program for the harness's own tests: it
// serves HTTP on the address in its first argument, answering $GREETING,
// and says goodbye on SIGTERM.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: os.Args[1], Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, os.Getenv("GREETING"))
	})}
	go func() {
		<-ctx.Done()
		fmt.Println("terminating")
		srv.Close()
	}()
	fmt.Println("listening on", os.Args[1])
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
