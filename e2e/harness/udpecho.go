package harness

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// UDPEcho is a UDP server on 127.0.0.1 that answers each datagram, after
// Delay, with "<name> got=<datagram>" to the address it came from: a
// backend of UDP listeners, slow when Delay is set (a peer that answers
// in seconds, as SlowPeer is for TCP).
type UDPEcho struct {
	Name string
	Addr string
	Port int
	conn *net.UDPConn
	// received counts the datagrams received, answered or not yet.
	received atomic.Int64
}

// maxDatagram bounds what one datagram the echo reads: more than the
// tests send.
const maxDatagram = 2048

// StartUDPEcho starts a UDP echo named name that answers after delay
// (0: at once). The test's cleanup closes it.
func StartUDPEcho(t testing.TB, name string, delay time.Duration) *UDPEcho {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("UDP echo %s: %v", name, err)
	}
	e := &UDPEcho{Name: name, Addr: conn.LocalAddr().String(), Port: conn.LocalAddr().(*net.UDPAddr).Port, conn: conn}
	go e.serve(delay)
	t.Cleanup(func() { conn.Close() })
	return e
}

// Received is how many datagrams the echo received.
func (e *UDPEcho) Received() int64 { return e.received.Load() }

func (e *UDPEcho) serve(delay time.Duration) {
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := e.conn.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		e.received.Add(1)
		answer := []byte(fmt.Sprintf("%s got=%s", e.Name, buf[:n]))
		if delay == 0 {
			_, _ = e.conn.WriteToUDP(answer, from)
			continue
		}
		time.AfterFunc(delay, func() { _, _ = e.conn.WriteToUDP(answer, from) })
	}
}

// UDPExchange sends one datagram to addr from conn (a new socket, so a
// new session of a UDP proxy, when conn is nil) and returns the answer,
// waiting at most wait.
func UDPExchange(conn *net.UDPConn, addr, msg string, wait time.Duration) (string, error) {
	if conn == nil {
		raddr, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return "", err
		}
		if conn, err = net.DialUDP("udp", nil, raddr); err != nil {
			return "", err
		}
		defer conn.Close()
	}
	if err := conn.SetDeadline(time.Now().Add(wait)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(msg)); err != nil {
		return "", fmt.Errorf("sending: %w", err)
	}
	buf := make([]byte, maxDatagram)
	n, err := conn.Read(buf)
	if err != nil {
		return "", fmt.Errorf("no answer: %w", err)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// FreeUDPAndTCPPort is a port of 127.0.0.1 free for both UDP and TCP (a
// Gateway's UDP and TCP listeners of one port).
func FreeUDPAndTCPPort(t testing.TB) int {
	t.Helper()
	for range 50 {
		p := FreePort(t)
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		if err == nil {
			c.Close()
			return p
		}
	}
	t.Fatal("FreeUDPAndTCPPort: no port free for both")
	return 0
}
