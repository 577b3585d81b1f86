package harness

import (
	"net"
	"strconv"
	"testing"
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
