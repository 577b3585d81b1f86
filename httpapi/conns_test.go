package httpapi

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"

	"github.com/tenure-io/tenure/test/harness"
)

// serveLimited serves a plain 200 within limits on a loopback port.
func serveLimited(t *testing.T, limits ConnLimits) string {
	t.Helper()
	return serveLimitedHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}), limits)
}

// serveLimitedHandler serves h within limits on a loopback port.
func serveLimitedHandler(t *testing.T, h http.Handler, limits ConnLimits) string {
	t.Helper()
	srv, err := NewHTTPServer(h, limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one request on c and reads its answer's status and headers.
func get(t *testing.T, c net.Conn) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// closedByServer reports whether the server closed c within d (whatever
// it answered before).
func closedByServer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return err == nil || !strings.Contains(err.Error(), "timeout")
}

// Connections past the limit (one client's, here) are answered 503
// too_many_connections with Retry-After and closed; once the idle ones close, the
// same client is served again.
func TestConnectionsAreBounded(t *testing.T) {
	limits := DefaultConnLimits(time.Minute)
	limits.MaxConns, limits.MaxConnsPerClient = 10, 2
	addr := serveLimited(t, limits)
	idle := []net.Conn{dial(t, addr), dial(t, addr)}
	if r := get(t, idle[0]); r.StatusCode != http.StatusOK {
		t.Fatalf("first connection: %d", r.StatusCode)
	}
	over := dial(t, addr)
	r := get(t, over)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a connection past the limit: %d, Retry-After %q; want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if !closedByServer(over, 5*time.Second) {
		t.Errorf("the connection past the limit was not closed")
	}
	for _, c := range idle {
		c.Close()
	}
	harness.WaitUntil(t, 5*time.Second, "a new connection to be served", func() bool {
		c := dial(t, addr)
		return get(t, c).StatusCode == http.StatusOK
	})
}

// A connection that sends nothing more is closed after the idle timeout,
// and one that sends its body too slowly is cut after the read timeout:
// neither holds a file descriptor for ever.
func TestIdleAndSlowConnectionsAreClosed(t *testing.T) {
	limits := DefaultConnLimits(time.Minute)
	limits.IdleTimeout, limits.ReadTimeout, limits.ReadHeaderTimeout = 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	addr := serveLimited(t, limits)
	idle := dial(t, addr)
	if r := get(t, idle); r.StatusCode != http.StatusOK {
		t.Fatalf("request: %d", r.StatusCode)
	}
	if !closedByServer(idle, 5*time.Second) {
		t.Errorf("an idle keep-alive connection was not closed")
	}
	slow := dial(t, addr)
	io.WriteString(slow, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	if !closedByServer(slow, 5*time.Second) {
		t.Errorf("a sender of a slow body was not cut")
	}
	silent := dial(t, addr)
	if !closedByServer(silent, 5*time.Second) {
		t.Errorf("a connection that sends no request was not closed")
	}
}

// The limits are checked, naming the flag.
func TestConnLimitsValidate(t *testing.T) {
	l := DefaultConnLimits(time.Minute)
	l.MaxConnsPerClient = l.MaxConns + 1
	if err := l.Validate(); err == nil || !strings.Contains(err.Error(), "http-max-conns-per-client") {
		t.Errorf("per-client above the total: %v", err)
	}
}

// A flood of failed TLS handshakes (clients without a certificate of the
// cluster's CA) writes a bounded error log: 300 of them write at most
// DefaultRefusalLogLines lines of handshake errors per
// DefaultRefusalLogInterval (and a line that counts the rest), not one
// each.
func TestHTTPErrorLogOfFailedHandshakesIsBounded(t *testing.T) {
	pki := newTestPKI(t)
	sc, err := cluster.ServerTLSConfig(pki.server(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &harness.Buffer{}
	srv, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		DefaultConnLimits(time.Minute), log.New(logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	srv.TLSConfig = sc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	const attempts = 300
	start := time.Now()
	for range attempts {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // no client certificate
		if err != nil {
			continue // refused during the handshake
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, c) // until the server has refused it
		c.Close()
	}
	windows := int(time.Since(start)/DefaultRefusalLogInterval) + 1
	harness.WaitFor(t, 5*time.Second, func() error {
		if n := strings.Count(logs.String(), "TLS handshake error"); n == 0 {
			return fmt.Errorf("no handshake error logged yet")
		}
		return nil
	})
	if n, bound := strings.Count(logs.String(), "TLS handshake error"), windows*(DefaultRefusalLogLines+1); n > bound {
		t.Errorf("%d failed handshakes wrote %d log lines about them, want at most %d", attempts, n, bound)
	}
}

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

// TestStreamCountsAgainstTheConnectionLimits: a request stream, a
// hijacked connection, counts against -http-max-conns-per-client for as
// long as it is open, and no longer.
func TestStreamCountsAgainstTheConnectionLimits(t *testing.T) {
	n := startCluster(t, 1)
	api, err := New(testAPIConfig(n.cluster.Node(0), prometheus.NewRegistry(), hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	limits := DefaultConnLimits(time.Minute)
	limits.MaxConns, limits.MaxConnsPerClient = 10, 1
	addr := serveLimitedHandler(t, api, limits)

	stream, _ := rawStream(t, addr)
	if r := get(t, dial(t, addr)); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second connection beside an open stream: %d, want 503 (one connection per client)", r.StatusCode)
	}
	stream.Close()
	harness.WaitUntil(t, 5*time.Second, "a connection to be served once the stream closed", func() bool {
		return get(t, dial(t, addr)).StatusCode != http.StatusServiceUnavailable
	})
}
