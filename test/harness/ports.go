package harness

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
)

// FreePorts returns n distinct loopback ports that were free for both TCP
// and UDP (gossip binds both) a moment ago. Another process may take one
// before the caller binds it: callers that start processes retry on
// "address already in use".
func FreePorts(n int) ([]int, error) {
	var (
		ports   []int
		closers []io.Closer
	)
	defer func() {
		for _, cl := range closers {
			cl.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10*n {
			return nil, fmt.Errorf("found only %d free ports of %d", len(ports), n)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		closers = append(closers, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", Loopback(port))
		if err != nil {
			continue
		}
		closers = append(closers, pc)
		ports = append(ports, port)
	}
	return ports, nil
}

// FreeAddr returns a loopback host:port that was free for TCP and UDP a
// moment ago; it fails t when there is none.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return Loopback(ports[0])
}

// Loopback is the address of port on 127.0.0.1.
func Loopback(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// AcceptEach hands each connection accepted on ln to handle, on the one
// accepting goroutine, until ln is closed; t's cleanup closes it.
func AcceptEach(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for conn, err := ln.Accept(); err == nil; conn, err = ln.Accept() {
			handle(conn)
		}
	}()
}
