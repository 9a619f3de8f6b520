package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/miekg/dns"
)

// dnsServer stands in for the coredns image (cluster dns -conf FILE): a
// real DNS server, over UDP and TCP, for the conformance suite's UDPRoute
// test, which asks it for a name of a zone its Corefile serves with the
// whoami plugin. It reads the Corefile's server blocks and answers as
// whoami does for the zones whose block has it (an empty answer, the
// client's address as an A or AAAA record and its port and transport as
// an SRV record in the additional section); every other question is
// REFUSED. It never forwards (the Corefile's forward to public resolvers):
// the test machine reaches no outside resolver.
func dnsServer(args []string) error {
	fs := flag.NewFlagSet("dns", flag.ExitOnError)
	conf := fs.String("conf", "Corefile", "the Corefile")
	_ = fs.Parse(args)
	zones, port, err := whoamiZones(*conf)
	if err != nil {
		return err
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(whoamiAnswer(zones, w.RemoteAddr(), r)) })
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errs := make(chan error, 2)
	var servers []*dns.Server
	for _, network := range []string{"udp", "tcp"} {
		s := &dns.Server{Addr: ":" + port, Net: network, Handler: handler}
		servers = append(servers, s)
		go func() { errs <- s.ListenAndServe() }()
	}
	fmt.Fprintf(os.Stderr, "dns: whoami for %v on port %s (udp, tcp); everything else REFUSED\n", zones, port)
	select {
	case err = <-errs:
	case <-ctx.Done():
	}
	for _, s := range servers {
		_ = s.Shutdown()
	}
	return err
}

// serverBlock is a Corefile server block's opening line: "zone[:port] {"
// (several zones may share one).
var serverBlock = regexp.MustCompile(`^\s*([^\s{#][^{#]*?)\s*\{\s*$`)

// whoamiZones reads a Corefile's server blocks: the zones whose block uses
// whoami (fully qualified), and the port of its blocks (53 by default; all
// must agree).
func whoamiZones(path string) (zones []string, port string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var current []string
	depth := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := serverBlock.FindStringSubmatch(line); m != nil && depth == 0 {
			if current, port, err = blockZones(m[1], port); err != nil {
				return nil, "", fmt.Errorf("%s: %w", path, err)
			}
			depth++
			continue
		}
		switch {
		case strings.HasSuffix(line, "{"):
			depth++
		case line == "}":
			depth--
		case depth == 1 && (line == "whoami" || strings.HasPrefix(line, "whoami ")):
			zones = append(zones, current...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if port == "" {
		return nil, "", errors.New(path + ": no server block")
	}
	return zones, port, nil
}

// blockZones are the zones of a server block's keys ("zone[:port] ..."),
// fully qualified, and their port (53 by default), which must be port's
// when port is set (a previous block's).
func blockZones(keys, port string) (zones []string, _ string, _ error) {
	for _, key := range strings.Fields(keys) {
		zone, p, found := strings.Cut(strings.TrimPrefix(key, "dns://"), ":")
		if !found {
			p = "53"
		}
		if port != "" && p != port {
			return nil, "", fmt.Errorf("server blocks of ports %s and %s: one port only", port, p)
		}
		port = p
		zones = append(zones, dns.Fqdn(zone))
	}
	return zones, port, nil
}

// whoamiAnswer answers r as coredns's whoami plugin does for a name of
// zones; REFUSED otherwise.
func whoamiAnswer(zones []string, from net.Addr, r *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) != 1 || !inZones(zones, r.Question[0].Name) {
		m.Rcode = dns.RcodeRefused
		return m
	}
	name := r.Question[0].Name
	ip, port, transport := net.IP(nil), 0, "udp"
	switch a := from.(type) {
	case *net.UDPAddr:
		ip, port = a.IP, a.Port
	case *net.TCPAddr:
		ip, port, transport = a.IP, a.Port, "tcp"
	}
	hdr := dns.RR_Header{Name: name, Class: dns.ClassINET}
	if v4 := ip.To4(); v4 != nil {
		hdr.Rrtype = dns.TypeA
		m.Extra = append(m.Extra, &dns.A{Hdr: hdr, A: v4})
	} else {
		hdr.Rrtype = dns.TypeAAAA
		m.Extra = append(m.Extra, &dns.AAAA{Hdr: hdr, AAAA: ip})
	}
	m.Extra = append(m.Extra, &dns.SRV{
		Hdr:    dns.RR_Header{Name: "_" + transport + "." + name, Rrtype: dns.TypeSRV, Class: dns.ClassINET},
		Port:   uint16(port), //nolint:gosec // a socket's port
		Target: ".",
	})
	return m
}

// inZones reports whether name is one of zones or below one.
func inZones(zones []string, name string) bool {
	for _, z := range zones {
		if dns.IsSubDomain(z, dns.Fqdn(name)) {
			return true
		}
	}
	return false
}
