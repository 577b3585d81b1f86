package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback source address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A flood of silent connections past the connections answered 503 is
// closed at accept, unread: the HTTP port holds at most
// FileDescriptors of them, whatever the flood, long before the header
// timeout would close them.
func TestHTTPFloodPastOverflowClosedAtAccept(t *testing.T) {
	// 100 connections from ten clients, each within its own cap.
	limits, _, closed := flood(t, 16, 16, 100, func(i int) string { return fmt.Sprintf("127.0.15.%d", 1+i/10) })
	// A client that is not a server of the cluster gets all places but
	// the servers' reserve.
	if kept := limits.FileDescriptors() - limits.PeerReserve(); closed != 100-kept {
		t.Errorf("%d of 100 silent connections closed at once, want the %d past %d", closed, 100-kept, kept)
	}
}

// The last connections under the cap are kept for the cluster's servers:
// a client elsewhere is answered 503 there, a server's forwarding is
// still served.
func TestHTTPConnectionsReservedForServers(t *testing.T) {
	limits := DefaultConnLimits(time.Minute)
	limits.MaxConns, limits.MaxConnsPerClient = 8, 8
	limits.Trusted = func(ip string) bool { return ip == "127.0.0.1" }
	addr := serveLimited(t, limits)
	for i := 0; i < limits.MaxConns-limits.PeerReserve(); i++ {
		if r := get(t, dialFrom(t, "127.0.13.1", addr)); r.StatusCode != http.StatusOK {
			t.Fatalf("connection %d of a client: %d", i, r.StatusCode)
		}
	}
	if r := get(t, dialFrom(t, "127.0.13.1", addr)); r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a client's connection into the servers' reserve: %d, want 503", r.StatusCode)
	}
	if r := get(t, dialFrom(t, "127.0.0.1", addr)); r.StatusCode != http.StatusOK {
		t.Errorf("a server's connection within the reserve: %d, want 200", r.StatusCode)
	}
}

// One client address cannot take every place: past its own cap and a
// small overflow answered 503, its new connections are closed at accept,
// and another client is still served.
func TestHTTPOneClientCannotTakeEveryPlace(t *testing.T) {
	limits, addr, closed := flood(t, 400, 8, 300, func(int) string { return "127.0.14.1" })
	if kept := limits.MaxConnsPerClient + limits.clientOverflow(); closed != 300-kept {
		t.Errorf("%d of one client's 300 silent connections closed at once, want the %d past %d", closed, 300-kept, kept)
	}
	if r := get(t, dialFrom(t, "127.0.14.2", addr)); r.StatusCode != http.StatusOK {
		t.Errorf("another client during the flood: %d, want 200", r.StatusCode)
	}
}

// flood serves a handler that answers nothing behind LimitListener, with
// maxConns and perClient and a header timeout of a minute, opens n silent
// connections to it, the i-th from src(i), and counts those closed at
// once. It returns the limits, the server's address and the count.
func flood(t *testing.T, maxConns, perClient, n int, src func(i int) string) (ConnLimits, string, int) {
	t.Helper()
	limits := DefaultConnLimits(time.Minute)
	limits.MaxConns, limits.MaxConnsPerClient = maxConns, perClient
	limits.ReadHeaderTimeout = time.Minute
	srv, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(LimitListener(ln, limits))
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	var conns []net.Conn
	for i := 0; i < n; i++ {
		conns = append(conns, dialFrom(t, src(i), addr))
	}
	return limits, addr, closedAtOnce(conns)
}

// closedAtOnce reads every one of conns, unwritten, for two seconds and
// counts those the server closed meanwhile.
func closedAtOnce(conns []net.Conn) int {
	deadline := time.Now().Add(2 * time.Second)
	results := make(chan bool, len(conns))
	for _, c := range conns {
		go func(c net.Conn) {
			c.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, c)
			results <- !errors.Is(err, os.ErrDeadlineExceeded)
		}(c)
	}
	closed := 0
	for range conns {
		if <-results {
			closed++
		}
	}
	return closed
}
