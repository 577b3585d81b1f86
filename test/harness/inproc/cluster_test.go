package inproc

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// serveID serves every request with the node's ID.
func serveID(n *cluster.Node, _ *prometheus.Registry, _ hclog.Logger) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, n.ID()) }), nil
}

// An isolated leader is replaced by one of the others; healed, it follows
// whoever leads.
func TestIsolateAndHeal(t *testing.T) {
	c := Start(t, 3, Options{})
	old := c.Leader()
	c.Isolate(old)
	if now := c.Leader(old); now == old {
		t.Fatalf("got leader %d again, want another node", now)
	}
	c.Heal(old)
	harness.WaitFor(t, 10*time.Second, func() error {
		leader := c.Peer(c.Leader()).ID
		if got := c.Node(old).Status().LeaderID; got != leader {
			return fmt.Errorf("healed node sees leader %q, want %q", got, leader)
		}
		return nil
	})
}

// Each node serves Serve's handler at its HTTPAddr; a stopped node's front
// answers 503 until it runs again.
func TestServeFrontsEveryNode(t *testing.T) {
	c := Start(t, 3, Options{TCP: true, Serve: serveID})
	l := c.AgreedLeader()
	if got, want := c.Node(l).LeaderHTTPAddr(), c.Front(l).Addr; got != want {
		t.Fatalf("got leader HTTP address %q, want its front's %q", got, want)
	}
	get := func(i int) (int, string) {
		t.Helper()
		resp, err := http.Get(c.Front(i).URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i := 0; i < c.Len(); i++ {
		if status, body := get(i); status != http.StatusOK || body != c.Peer(i).ID {
			t.Errorf("node %d: got %d %q, want 200 %q", i, status, body, c.Peer(i).ID)
		}
		if got := c.Front(i).Hits.Load(); got != 1 {
			t.Errorf("node %d: got %d hits, want 1", i, got)
		}
	}
	c.Stop(0)
	if status, _ := get(0); status != http.StatusServiceUnavailable {
		t.Errorf("stopped node: got status %d, want 503", status)
	}
	c.Restart(0)
	if status, body := get(0); status != http.StatusOK || body != "n1" {
		t.Errorf("restarted node: got %d %q, want 200 n1", status, body)
	}
}

// A node whose Raft port is held for a moment when it starts again is
// started again once the port is free, with its metrics on a new registry
// (the failed start registered them on the first one already).
func TestRestartWaitsForItsPort(t *testing.T) {
	c := Start(t, 1, Options{TCP: true, Serve: serveID})
	c.Stop(0)
	ln, err := net.Listen("tcp", c.Peer(0).RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln.Close()
	}()
	c.Restart(0)
	if got := c.Leader(); got != 0 {
		t.Fatalf("got leader %d after the restart, want 0", got)
	}
}

// A cluster whose port, picked free, is taken before its node binds it
// starts again on new ports.
func TestStartTakesNewPortsWhenOneIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	defer func(f func(testing.TB) string) { freeAddr = f }(freeAddr)
	picks := 0
	freeAddr = func(t testing.TB) string {
		if picks++; picks == 2 {
			return taken // the second node's first pick
		}
		return harness.FreeAddr(t)
	}
	c := Start(t, 3, Options{TCP: true, Serve: serveID})
	for i := range c.Len() {
		if c.Peer(i).RaftAddr == taken {
			t.Fatalf("node %d was given the taken port %s", i, taken)
		}
	}
	if picks < 6 {
		t.Fatalf("%d ports picked, want the cluster's ports picked again", picks)
	}
	c.Leader()
}

// Ports picked for a cluster are distinct, even when a pick returns a
// port picked before (each is free again once picked).
func TestStartPicksDistinctPorts(t *testing.T) {
	defer func(f func(testing.TB) string) { freeAddr = f }(freeAddr)
	var last string
	picks := 0
	freeAddr = func(t testing.TB) string {
		if picks++; picks%2 == 0 {
			return last // every other pick repeats the one before
		}
		last = harness.FreeAddr(t)
		return last
	}
	c := Start(t, 3, Options{TCP: true, Gossip: true})
	seen := map[string]bool{}
	for i := range c.Len() {
		for _, a := range []string{c.Peer(i).RaftAddr, c.GossipAddr(i)} {
			if seen[a] {
				t.Fatalf("address %s given twice", a)
			}
			seen[a] = true
		}
	}
	c.Leader()
}
