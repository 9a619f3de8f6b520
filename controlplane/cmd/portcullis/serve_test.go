package main

import (
	"strings"
	"testing"
)

// serve -f with a path that does not exist stops at once with an error
// naming the path, instead of serving an empty configuration.
func TestServeMissingPath(t *testing.T) {
	_, _, err := run("serve", "-f", "/nonexistent/proxies", "--xds-address", "127.0.0.1:0", "--admin-address", "")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/proxies") {
		t.Fatalf("serve -f /nonexistent/proxies: error %v, want one naming the path", err)
	}
}
