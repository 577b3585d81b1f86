package harness

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestFreePortsAreDistinctLoopbackPorts(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 || seen[p] {
			t.Fatalf("got ports %v, want 8 distinct valid ones", ports)
		}
		seen[p] = true
	}
	if len(ports) != 8 {
		t.Fatalf("got %d ports, want 8", len(ports))
	}
}

func TestFreeAddrIsOnLoopback(t *testing.T) {
	host, port, err := net.SplitHostPort(FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" {
		t.Errorf("got host %q, want 127.0.0.1", host)
	}
	if p, err := strconv.Atoi(port); err != nil || Loopback(p) != net.JoinHostPort(host, port) {
		t.Errorf("got port %q, want a number that Loopback turns back into the address", port)
	}
}

func TestAcceptEachHandsOverEveryConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	AcceptEach(t, ln, func(c net.Conn) {
		c.Write([]byte("x"))
		c.Close()
	})
	for i := range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(b) != "x" {
			t.Errorf("connection %d: read %q, %v; want \"x\"", i, b, err)
		}
	}
}
