package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The conformance suite's Corefile: whoami for foo.bar.com on port 53.
const suiteCorefile = `.:53 {
    forward . 8.8.8.8 9.9.9.9
    log
    errors
}
foo.bar.com:53 {
  whoami
}
`

// TestWhoami: the zones of the suite's Corefile, and the answers over a
// real UDP socket: whoami's for foo.bar.com (the client's address and
// port), REFUSED for a name the Corefile would forward.
func TestWhoami(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte(suiteCorefile), 0o600); err != nil {
		t.Fatal(err)
	}
	zones, port, err := whoamiZones(conf)
	if err != nil || len(zones) != 1 || zones[0] != "foo.bar.com." || port != "53" {
		t.Fatalf("zones %v, port %q, %v: want [foo.bar.com.] on 53", zones, port, err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(whoamiAnswer(zones, w.RemoteAddr(), r)) })}
	go func() { _ = s.ActivateAndServe() }()
	defer func() { _ = s.Shutdown() }()
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("foo.bar.com.", dns.TypeA)
	r, _, err := c.Exchange(q, pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Extra) != 2 {
		t.Fatalf("answer %v", r)
	}
	if a, ok := r.Extra[0].(*dns.A); !ok || !a.A.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("additional %v, want the client's address 127.0.0.1", r.Extra[0])
	}
	if srv, ok := r.Extra[1].(*dns.SRV); !ok || srv.Hdr.Name != "_udp.foo.bar.com." || srv.Port == 0 {
		t.Errorf("additional %v, want the client's UDP port", r.Extra[1])
	}
	q.SetQuestion("example.com.", dns.TypeA)
	if r, _, err = c.Exchange(q, pc.LocalAddr().String()); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("example.com: %v, %v: want REFUSED (never forwarded)", r, err)
	}
}
